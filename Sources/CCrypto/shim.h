#ifndef VPNPROV_CCRYPTO_SHIM_H
#define VPNPROV_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/cms.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>
#include <openssl/objects.h>
#include <openssl/core_names.h>
#include <openssl/provider.h>
#include <openssl/kdf.h>

/* OpenSSL macros and variadic functions do not import into Swift; wrap them here. */
static inline long vpnprov_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline void vpnprov_OPENSSL_free(void *p) { OPENSSL_free(p); }

/* Stacks (the sk_TYPE_* names are macros). */
static inline int vpnprov_sk_GENERAL_NAME_num(const GENERAL_NAMES *sk) { return sk_GENERAL_NAME_num(sk); }
static inline GENERAL_NAME *vpnprov_sk_GENERAL_NAME_value(const GENERAL_NAMES *sk, int i) { return sk_GENERAL_NAME_value(sk, i); }
static inline int vpnprov_sk_GENERAL_NAME_push(GENERAL_NAMES *sk, GENERAL_NAME *n) { return sk_GENERAL_NAME_push(sk, n); }
static inline GENERAL_NAMES *vpnprov_sk_GENERAL_NAME_new_null(void) { return sk_GENERAL_NAME_new_null(); }
static inline void vpnprov_GENERAL_NAMES_free(GENERAL_NAMES *sk) { GENERAL_NAMES_free(sk); }

static inline int vpnprov_sk_ASN1_OBJECT_num(const STACK_OF(ASN1_OBJECT) *sk) { return sk_ASN1_OBJECT_num(sk); }
static inline ASN1_OBJECT *vpnprov_sk_ASN1_OBJECT_value(const STACK_OF(ASN1_OBJECT) *sk, int i) { return sk_ASN1_OBJECT_value(sk, i); }
static inline void vpnprov_EXTENDED_KEY_USAGE_free(EXTENDED_KEY_USAGE *e) { EXTENDED_KEY_USAGE_free(e); }

static inline int vpnprov_sk_POLICYINFO_num(const CERTIFICATEPOLICIES *sk) { return sk_POLICYINFO_num(sk); }
static inline const ASN1_OBJECT *vpnprov_POLICYINFO_oid(const CERTIFICATEPOLICIES *sk, int i) { return sk_POLICYINFO_value(sk, i)->policyid; }
static inline void vpnprov_CERTIFICATEPOLICIES_free(CERTIFICATEPOLICIES *p) { CERTIFICATEPOLICIES_free(p); }

static inline STACK_OF(X509) *vpnprov_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int vpnprov_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline int vpnprov_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *vpnprov_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
static inline void vpnprov_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }
static inline void vpnprov_sk_X509_pop_free(STACK_OF(X509) *sk) { sk_X509_pop_free(sk, X509_free); }

static inline int vpnprov_sk_X509_REVOKED_num(const STACK_OF(X509_REVOKED) *sk) { return sk_X509_REVOKED_num(sk); }
static inline X509_REVOKED *vpnprov_sk_X509_REVOKED_value(const STACK_OF(X509_REVOKED) *sk, int i) { return sk_X509_REVOKED_value(sk, i); }

/* X509V3 context without a config database. */
static inline void vpnprov_X509V3_set_ctx_nodb(X509V3_CTX *ctx) { X509V3_set_ctx_nodb(ctx); }

/* Subject printing: "C=DE, O=acme, CN=fra-1" (strongSwan's style), UTF-8 kept. */
static inline unsigned long vpnprov_name_print_flags(void) {
    return XN_FLAG_SEP_CPLUS_SPC | XN_FLAG_FN_SN | (ASN1_STRFLGS_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
}

static inline int vpnprov_GEN_DNS(void) { return GEN_DNS; }
static inline int vpnprov_GEN_IPADD(void) { return GEN_IPADD; }
static inline int vpnprov_GEN_EMAIL(void) { return GEN_EMAIL; }
static inline int vpnprov_GEN_DIRNAME(void) { return GEN_DIRNAME; }

static inline int vpnprov_PKCS12_DEFAULT_ITER(void) { return PKCS12_DEFAULT_ITER; }

/* PKCS#12 safes and bags, for building a container from its parts. */
static inline STACK_OF(PKCS12_SAFEBAG) *vpnprov_sk_PKCS12_SAFEBAG_new_null(void) { return sk_PKCS12_SAFEBAG_new_null(); }
static inline int vpnprov_sk_PKCS12_SAFEBAG_push(STACK_OF(PKCS12_SAFEBAG) *sk, PKCS12_SAFEBAG *bag) { return sk_PKCS12_SAFEBAG_push(sk, bag); }
static inline void vpnprov_sk_PKCS12_SAFEBAG_pop_free(STACK_OF(PKCS12_SAFEBAG) *sk) { sk_PKCS12_SAFEBAG_pop_free(sk, PKCS12_SAFEBAG_free); }
static inline void vpnprov_sk_PKCS7_pop_free(STACK_OF(PKCS7) *sk) { sk_PKCS7_pop_free(sk, PKCS7_free); }
#endif
