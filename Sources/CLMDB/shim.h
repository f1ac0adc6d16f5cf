#ifndef FEEDSTORE_CLMDB_SHIM_H
#define FEEDSTORE_CLMDB_SHIM_H
#include <lmdb.h>
#endif
