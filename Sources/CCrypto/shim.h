#ifndef VPNPROV_CCRYPTO_SHIM_H
#define VPNPROV_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>
#include <openssl/objects.h>
#include <openssl/core_names.h>

/* OpenSSL macros and variadic functions do not import into Swift; wrap them here. */
static inline long vpnprov_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline void vpnprov_OPENSSL_free(void *p) { OPENSSL_free(p); }
#endif
