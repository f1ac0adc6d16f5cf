#ifndef FEEDSTORE_BENCH_LMDB_SHIM_H
#define FEEDSTORE_BENCH_LMDB_SHIM_H
#include <lmdb.h>
#endif
