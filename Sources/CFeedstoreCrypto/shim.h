#ifndef FEEDSTORE_CRYPTO_SHIM_H
#define FEEDSTORE_CRYPTO_SHIM_H
#include <openssl/evp.h>
#endif
