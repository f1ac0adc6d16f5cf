#ifndef FEEDSTORE_NATS_SHIM_H
#define FEEDSTORE_NATS_SHIM_H
#include <nats/nats.h>
#endif
