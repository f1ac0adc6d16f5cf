#ifndef FEEDSTORE_NATS_SHIM_H
#define FEEDSTORE_NATS_SHIM_H
#include <stdbool.h>
#include <nats/nats.h>

/* The library's destructor of a message: exported, not declared in its headers. */
void natsMsg_free(void *object);

/* Destroys a message on the calling thread; returns whether it did.
 *
 * natsMsg_Destroy hands every message the library made to its collector thread and wakes that
 * thread for it: a thread switch for each message received or published. A message opens with
 * the collector's link and callback (two pointers); when the callback there is the library's
 * own destructor, it is cleared, and natsMsg_Destroy then frees the message at once. A message
 * laid out otherwise goes the library's usual way. */
static inline bool feedstore_natsMsg_DestroyNow(natsMsg *message) {
    if (message == NULL) return false;
    void **collected = (void **)message;
    bool now = collected[0] == NULL && collected[1] == (void *)&natsMsg_free;
    if (now) collected[1] = NULL;
    natsMsg_Destroy(message);
    return now;
}
#endif
