/* Open MPI's MPI_Allreduce bandwidth, same sizes and method as ptrun_allreduce.cpp:
 * mpirun -np N mpi_allreduce [MAX_MIB]. Prints "mpi BYTES TIME_US ALGBW_GBPS BUSBW_GBPS". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, n = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    size_t max_bytes = (size_t)(argc > 1 ? strtoull(argv[1], NULL, 10) : 256) << 20;
    float* buf = malloc(max_bytes);
    memset(buf, 0, max_bytes);
    for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
        int count = (int)(bytes / 4);
        size_t it = ((size_t)1 << 30) / bytes;
        int iters = (int)(it < 5 ? 5 : it > 10000 ? 10000 : it);
        int warm = iters / 10 < 2 ? 2 : iters / 10;
        for (int i = 0; i < warm; ++i)
            MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double worst = 1e300; /* best of 5 trials, each the slowest rank's mean */
        for (int trial = 0; trial < 5; ++trial) {
            int n_it = iters / 5 < 1 ? 1 : iters / 5;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < n_it; ++i)
                MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double us = (MPI_Wtime() - t0) * 1e6 / n_it, slowest = 0;
            MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (slowest < worst) worst = slowest;
        }
        double algbw = (double)bytes / worst / 1e3;
        if (rank == 0) {
            printf("mpi %zu %.2f %.3f %.3f\n", bytes, worst, algbw, algbw * 2.0 * (n - 1) / n);
            fflush(stdout);
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
