#ifndef VPNPROV_CPNG_SHIM_H
#define VPNPROV_CPNG_SHIM_H
#include <png.h>
#endif
