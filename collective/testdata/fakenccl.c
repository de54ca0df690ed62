// A stand-in for libnccl.so.2 that records its arguments, so that the Go
// side's calling convention (the 128-byte ncclUniqueId passed by value, the
// seventh argument of ncclAllReduce on the stack) is checked without a GPU.
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct { char internal[128]; } ncclUniqueId;

static ncclUniqueId last_id;
static int last_nranks = -1, last_rank = -1;
static size_t last_count;
static int last_datatype = -1, last_op = -1;
static void *last_send, *last_recv, *last_comm, *last_stream;
static char message[64];

int ncclGetVersion(int *v) { *v = 22304; return 0; }

int ncclGetUniqueId(ncclUniqueId *id) {
  for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 3 + 1);
  return 0;
}

int ncclCommInitRank(void **comm, int nranks, ncclUniqueId id, int rank) {
  last_id = id;
  last_nranks = nranks;
  last_rank = rank;
  if (nranks < 1 || rank < 0 || rank >= nranks) return 4; // ncclInvalidArgument
  *comm = (void *)0x1234;
  return 0;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int datatype, int op, void *comm, void *stream) {
  last_send = (void *)send; last_recv = recv; last_count = count;
  last_datatype = datatype; last_op = op; last_comm = comm; last_stream = stream;
  return 0;
}

int ncclBroadcast(const void *send, void *recv, size_t count, int datatype, int root, void *comm, void *stream) { return 0; }
int ncclCommDestroy(void *comm) { return 0; }
int ncclCommAbort(void *comm) { return 0; }

const char *ncclGetErrorString(int r) {
  snprintf(message, sizeof message, "fake NCCL error %d", r);
  return message;
}

// fakeLastInit copies what the last ncclCommInitRank received.
void fakeLastInit(int *nranks, int *rank, unsigned char *id) {
  *nranks = last_nranks; *rank = last_rank; memcpy(id, last_id.internal, 128);
}

// fakeLastAllReduce copies what the last ncclAllReduce received.
void fakeLastAllReduce(void **send, void **recv, size_t *count, int *datatype, int *op, void **comm, void **stream) {
  *send = last_send; *recv = last_recv; *count = last_count; *datatype = last_datatype;
  *op = last_op; *comm = last_comm; *stream = last_stream;
}
