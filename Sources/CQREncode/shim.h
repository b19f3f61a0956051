#ifndef VPNPROV_CQRENCODE_SHIM_H
#define VPNPROV_CQRENCODE_SHIM_H
#include <qrencode.h>
#endif
