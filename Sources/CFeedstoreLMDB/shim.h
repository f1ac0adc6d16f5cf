#ifndef FEEDSTORE_LMDB_SHIM_H
#define FEEDSTORE_LMDB_SHIM_H
#include <lmdb.h>
#endif
