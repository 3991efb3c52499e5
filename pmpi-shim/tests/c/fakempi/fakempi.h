/* A fake MPI with an ABI no real library has: handles are pointers to
 * `struct fake_object`s named fake_*, ranks come from FAKE_RANK. It exists
 * to check that libmpitrace.so leaves a program on an MPI of unknown ABI
 * exactly as it runs without the shim (pmpi-shim/tests/unknown_abi.rs). */
#ifndef FAKEMPI_H
#define FAKEMPI_H
struct fake_object { long magic; int rank_or_size; };
typedef struct fake_object *MPI_Comm;
typedef struct fake_object *MPI_Datatype;
typedef struct { long bytes; int source, tag, error; } MPI_Status;
extern struct fake_object fake_comm_world, fake_type_int;
#define MPI_COMM_WORLD (&fake_comm_world)
#define MPI_INT (&fake_type_int)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_SUCCESS 0
int MPI_Init(int *argc, char ***argv);
int MPI_Finalize(void);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Barrier(MPI_Comm comm);
double MPI_Wtime(void);
int MPI_Comm_c2f(MPI_Comm comm);
int MPI_Get_library_version(char *version, int *len);
#endif
