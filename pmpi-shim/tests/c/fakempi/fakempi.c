/* The fake MPI library (see fakempi.h): one process, messages to itself
 * kept in a small queue. Its handles are checked on every call, so a
 * wrapper that changed or replaced one makes the call fail loudly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fakempi.h"

#define MAGIC_COMM 0x636f6d6dL
#define MAGIC_TYPE 0x74797065L
struct fake_object fake_comm_world = { MAGIC_COMM, 1 };
struct fake_object fake_type_int = { MAGIC_TYPE, (int)sizeof(int) };

static int inited;
static struct { int tag, len; char data[64]; } queue[8];
static int queued;

static int check(const char *fn, MPI_Comm comm) {
    if (comm == 0 || comm->magic != MAGIC_COMM) {
        fprintf(stderr, "fakempi: %s got a bad communicator %p\n", fn, (void *)comm);
        exit(70);
    }
    if (!inited) {
        fprintf(stderr, "fakempi: %s before MPI_Init\n", fn);
        exit(71);
    }
    return 0;
}

int MPI_Init(int *argc, char ***argv) { (void)argc; (void)argv; inited = 1; return MPI_SUCCESS; }
int MPI_Finalize(void) { inited = 0; return MPI_SUCCESS; }
int MPI_Comm_rank(MPI_Comm comm, int *rank) { check("MPI_Comm_rank", comm); *rank = 0; return MPI_SUCCESS; }
int MPI_Comm_size(MPI_Comm comm, int *size) { check("MPI_Comm_size", comm); *size = comm->rank_or_size; return MPI_SUCCESS; }
int MPI_Barrier(MPI_Comm comm) { return check("MPI_Barrier", comm); }
int MPI_Comm_c2f(MPI_Comm comm) { return comm == &fake_comm_world ? 91 : -1; }
double MPI_Wtime(void) { return 42.5; }
int MPI_Get_library_version(char *version, int *len) { *len = sprintf(version, "FakeMPI 0.1 (pointer handles)"); return 0; }

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    check("MPI_Send", comm);
    if (type->magic != MAGIC_TYPE || dest != 0 || queued == 8 || count * type->rank_or_size > 64) return 3;
    queue[queued].tag = tag;
    queue[queued].len = count * type->rank_or_size;
    memcpy(queue[queued].data, buf, queue[queued].len);
    queued++;
    return MPI_SUCCESS;
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status) {
    check("MPI_Recv", comm);
    if (type->magic != MAGIC_TYPE || source != 0 || queued == 0 || queue[0].tag != tag) return 4;
    if (queue[0].len > count * type->rank_or_size) return 5;
    memcpy(buf, queue[0].data, queue[0].len);
    if (status) { status->bytes = queue[0].len; status->source = 0; status->tag = tag; status->error = 0; }
    memmove(&queue[0], &queue[1], sizeof queue[0] * (size_t)(--queued));
    return MPI_SUCCESS;
}
