#ifndef VPNPROV_CPQ_SHIM_H
#define VPNPROV_CPQ_SHIM_H
#include <libpq-fe.h>
#endif
