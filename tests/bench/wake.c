/* Wake-up delay: rank 1 sleeps 3 ms between sends, so rank 0 has gone to
 * sleep waiting; prints how long after the send rank 0's receive returns
 * (same machine, one clock). Run with MPICORE_FAKE_HOSTS=4 -n 4 to measure a
 * TCP peer waking a sleeping rank, without it for shared memory. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){MPI_Init(&argc,&argv);int r,n;MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&n);
double sum=0,max=0;int iters=40;
for(int i=0;i<iters;i++){ if(r==1){usleep(3000);double t=now();MPI_Send(&t,1,MPI_DOUBLE,0,0,MPI_COMM_WORLD);}
 else if(r==0){double t;MPI_Recv(&t,1,MPI_DOUBLE,1,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE);double d=now()-t;sum+=d;if(d>max)max=d;}
 MPI_Barrier(MPI_COMM_WORLD);}
if(r==0)printf("wake delay mean %.1f us max %.1f us\n",sum/iters*1e6,max*1e6);
MPI_Finalize();}
