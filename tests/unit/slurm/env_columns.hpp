#pragma once
/// The SLURM_* environments of slurm-cluster-notes.md ("SLURM_* variables as seen by jobs", 2-node
/// netns cluster, SLURM 22.05), one function per column, transcribed from the captured table.
/// Left out: rows that only name the cluster, user, paths, pids or ports. Kept on purpose:
/// HOSTNAME, SLURMD_NODENAME, SLURM_SRUN_COMM_HOST, SLURM_LAUNCH_NODE_IPADDR, so the tests show
/// that ptrun takes none of them for the head host.

#include "ptrun/env/env_map.hpp"

namespace ptrun::slurm::test_env {

/// A batch
inline env::EnvMap column_A() {
    return {
        {"SLURMD_NODENAME", "node1"},
        {"SLURM_CPUS_ON_NODE", "1"},
        {"SLURM_GTIDS", "0"},
        {"SLURM_JOBID", "1"},
        {"SLURM_JOB_CPUS_PER_NODE", "1(x2)"},
        {"SLURM_JOB_ID", "1"},
        {"SLURM_JOB_NODELIST", "node[1-2]"},
        {"SLURM_JOB_NUM_NODES", "2"},
        {"SLURM_LOCALID", "0"},
        {"SLURM_NNODES", "2"},
        {"SLURM_NODEID", "0"},
        {"SLURM_NODELIST", "node[1-2]"},
        {"SLURM_NPROCS", "2"},
        {"SLURM_NTASKS", "2"},
        {"SLURM_NTASKS_PER_NODE", "1"},
        {"SLURM_PROCID", "0"},
        {"SLURM_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TOPOLOGY_ADDR", "node1"},
        {"HOSTNAME", "node1"},
    };
}

/// B step t0
inline env::EnvMap column_B() {
    return {
        {"SLURMD_NODENAME", "node1"},
        {"SLURM_CPUS_ON_NODE", "1"},
        {"SLURM_DISTRIBUTION", "cyclic"},
        {"SLURM_GTIDS", "0"},
        {"SLURM_JOBID", "1"},
        {"SLURM_JOB_CPUS_PER_NODE", "1(x2)"},
        {"SLURM_JOB_ID", "1"},
        {"SLURM_JOB_NODELIST", "node[1-2]"},
        {"SLURM_JOB_NUM_NODES", "2"},
        {"SLURM_LAUNCH_NODE_IPADDR", "10.77.0.11"},
        {"SLURM_LOCALID", "0"},
        {"SLURM_NNODES", "2"},
        {"SLURM_NODEID", "0"},
        {"SLURM_NODELIST", "node[1-2]"},
        {"SLURM_NPROCS", "2"},
        {"SLURM_NTASKS", "2"},
        {"SLURM_NTASKS_PER_NODE", "1"},
        {"SLURM_PROCID", "0"},
        {"SLURM_SRUN_COMM_HOST", "10.77.0.11"},
        {"SLURM_STEPID", "0"},
        {"SLURM_STEP_ID", "0"},
        {"SLURM_STEP_NODELIST", "node[1-2]"},
        {"SLURM_STEP_NUM_NODES", "2"},
        {"SLURM_STEP_NUM_TASKS", "2"},
        {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TOPOLOGY_ADDR", "node1"},
        {"HOSTNAME", "node1"},
    };
}

/// C step t1
inline env::EnvMap column_C() {
    return {
        {"SLURMD_NODENAME", "node2"},
        {"SLURM_CPUS_ON_NODE", "1"},
        {"SLURM_DISTRIBUTION", "cyclic"},
        {"SLURM_GTIDS", "1"},
        {"SLURM_JOBID", "1"},
        {"SLURM_JOB_CPUS_PER_NODE", "1(x2)"},
        {"SLURM_JOB_ID", "1"},
        {"SLURM_JOB_NODELIST", "node[1-2]"},
        {"SLURM_JOB_NUM_NODES", "2"},
        {"SLURM_LAUNCH_NODE_IPADDR", "10.77.0.11"},
        {"SLURM_LOCALID", "0"},
        {"SLURM_NNODES", "2"},
        {"SLURM_NODEID", "1"},
        {"SLURM_NODELIST", "node[1-2]"},
        {"SLURM_NPROCS", "2"},
        {"SLURM_NTASKS", "2"},
        {"SLURM_NTASKS_PER_NODE", "1"},
        {"SLURM_PROCID", "1"},
        {"SLURM_SRUN_COMM_HOST", "10.77.0.11"},
        {"SLURM_STEPID", "0"},
        {"SLURM_STEP_ID", "0"},
        {"SLURM_STEP_NODELIST", "node[1-2]"},
        {"SLURM_STEP_NUM_NODES", "2"},
        {"SLURM_STEP_NUM_TASKS", "2"},
        {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TOPOLOGY_ADDR", "node2"},
        {"HOSTNAME", "node1"},
    };
}

/// D sub-step
inline env::EnvMap column_D() {
    return {
        {"SLURMD_NODENAME", "node1"},
        {"SLURM_CPUS_ON_NODE", "1"},
        {"SLURM_DISTRIBUTION", "cyclic"},
        {"SLURM_GTIDS", "0"},
        {"SLURM_JOBID", "1"},
        {"SLURM_JOB_CPUS_PER_NODE", "1(x2)"},
        {"SLURM_JOB_ID", "1"},
        {"SLURM_JOB_NODELIST", "node[1-2]"},
        {"SLURM_JOB_NUM_NODES", "2"},
        {"SLURM_LAUNCH_NODE_IPADDR", "10.77.0.11"},
        {"SLURM_LOCALID", "0"},
        {"SLURM_NNODES", "1"},
        {"SLURM_NODEID", "0"},
        {"SLURM_NODELIST", "node[1-2]"},
        {"SLURM_NPROCS", "1"},
        {"SLURM_NTASKS", "1"},
        {"SLURM_NTASKS_PER_NODE", "1"},
        {"SLURM_PROCID", "0"},
        {"SLURM_SRUN_COMM_HOST", "10.77.0.11"},
        {"SLURM_STEPID", "1"},
        {"SLURM_STEP_ID", "1"},
        {"SLURM_STEP_NODELIST", "node1"},
        {"SLURM_STEP_NUM_NODES", "1"},
        {"SLURM_STEP_NUM_TASKS", "1"},
        {"SLURM_STEP_TASKS_PER_NODE", "1"},
        {"SLURM_TASKS_PER_NODE", "1"},
        {"SLURM_TOPOLOGY_ADDR", "node1"},
        {"HOSTNAME", "node1"},
    };
}

/// E 2/node t3
inline env::EnvMap column_E() {
    return {
        {"SLURMD_NODENAME", "node2"},
        {"SLURM_CPUS_ON_NODE", "2"},
        {"SLURM_DISTRIBUTION", "block"},
        {"SLURM_GTIDS", "2,3"},
        {"SLURM_JOBID", "2"},
        {"SLURM_JOB_CPUS_PER_NODE", "2(x2)"},
        {"SLURM_JOB_ID", "2"},
        {"SLURM_JOB_NODELIST", "node[1-2]"},
        {"SLURM_JOB_NUM_NODES", "2"},
        {"SLURM_LAUNCH_NODE_IPADDR", "10.77.0.11"},
        {"SLURM_LOCALID", "1"},
        {"SLURM_NNODES", "2"},
        {"SLURM_NODEID", "1"},
        {"SLURM_NODELIST", "node[1-2]"},
        {"SLURM_NPROCS", "4"},
        {"SLURM_NTASKS", "4"},
        {"SLURM_NTASKS_PER_NODE", "2"},
        {"SLURM_PROCID", "3"},
        {"SLURM_SRUN_COMM_HOST", "10.77.0.11"},
        {"SLURM_STEPID", "0"},
        {"SLURM_STEP_ID", "0"},
        {"SLURM_STEP_NODELIST", "node[1-2]"},
        {"SLURM_STEP_NUM_NODES", "2"},
        {"SLURM_STEP_NUM_TASKS", "4"},
        {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
        {"SLURM_TASKS_PER_NODE", "2(x2)"},
        {"SLURM_TOPOLOGY_ADDR", "node2"},
        {"HOSTNAME", "node1"},
    };
}

/// F -N2 only t1
inline env::EnvMap column_F() {
    return {
        {"SLURMD_NODENAME", "node2"},
        {"SLURM_CPUS_ON_NODE", "1"},
        {"SLURM_DISTRIBUTION", "cyclic"},
        {"SLURM_GTIDS", "1"},
        {"SLURM_JOBID", "5"},
        {"SLURM_JOB_CPUS_PER_NODE", "1(x2)"},
        {"SLURM_JOB_ID", "5"},
        {"SLURM_JOB_NODELIST", "node[1-2]"},
        {"SLURM_JOB_NUM_NODES", "2"},
        {"SLURM_LAUNCH_NODE_IPADDR", "10.77.0.11"},
        {"SLURM_LOCALID", "0"},
        {"SLURM_NNODES", "2"},
        {"SLURM_NODEID", "1"},
        {"SLURM_NODELIST", "node[1-2]"},
        {"SLURM_NPROCS", "2"},
        {"SLURM_NTASKS", "2"},
        {"SLURM_PROCID", "1"},
        {"SLURM_SRUN_COMM_HOST", "10.77.0.11"},
        {"SLURM_STEPID", "0"},
        {"SLURM_STEP_ID", "0"},
        {"SLURM_STEP_NODELIST", "node[1-2]"},
        {"SLURM_STEP_NUM_NODES", "2"},
        {"SLURM_STEP_NUM_TASKS", "2"},
        {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TOPOLOGY_ADDR", "node2"},
        {"HOSTNAME", "node1"},
    };
}

/// G srun -n3 t2
inline env::EnvMap column_G() {
    return {
        {"SLURMD_NODENAME", "node2"},
        {"SLURM_CPUS_ON_NODE", "1"},
        {"SLURM_GTIDS", "2"},
        {"SLURM_JOBID", "6"},
        {"SLURM_JOB_CPUS_PER_NODE", "2,1"},
        {"SLURM_JOB_ID", "6"},
        {"SLURM_JOB_NODELIST", "node[1-2]"},
        {"SLURM_JOB_NUM_NODES", "2"},
        {"SLURM_LAUNCH_NODE_IPADDR", "10.77.0.10"},
        {"SLURM_LOCALID", "0"},
        {"SLURM_NNODES", "2"},
        {"SLURM_NODEID", "1"},
        {"SLURM_NODELIST", "node[1-2]"},
        {"SLURM_NPROCS", "3"},
        {"SLURM_NTASKS", "3"},
        {"SLURM_PROCID", "2"},
        {"SLURM_SRUN_COMM_HOST", "10.77.0.10"},
        {"SLURM_STEPID", "0"},
        {"SLURM_STEP_ID", "0"},
        {"SLURM_STEP_NODELIST", "node[1-2]"},
        {"SLURM_STEP_NUM_NODES", "2"},
        {"SLURM_STEP_NUM_TASKS", "3"},
        {"SLURM_STEP_TASKS_PER_NODE", "2,1"},
        {"SLURM_TASKS_PER_NODE", "2,1"},
        {"SLURM_TOPOLOGY_ADDR", "node2"},
    };
}

/// H gpus t1
inline env::EnvMap column_H() {
    return {
        {"SLURMD_NODENAME", "node2"},
        {"SLURM_CPUS_ON_NODE", "1"},
        {"SLURM_DISTRIBUTION", "cyclic"},
        {"SLURM_GPUS_ON_NODE", "2"},
        {"SLURM_GPUS_PER_NODE", "2"},
        {"SLURM_GTIDS", "1"},
        {"SLURM_JOBID", "3"},
        {"SLURM_JOB_CPUS_PER_NODE", "1(x2)"},
        {"SLURM_JOB_GPUS", "0,1"},
        {"SLURM_JOB_ID", "3"},
        {"SLURM_JOB_NODELIST", "node[1-2]"},
        {"SLURM_JOB_NUM_NODES", "2"},
        {"SLURM_LAUNCH_NODE_IPADDR", "10.77.0.11"},
        {"SLURM_LOCALID", "0"},
        {"SLURM_NNODES", "2"},
        {"SLURM_NODEID", "1"},
        {"SLURM_NODELIST", "node[1-2]"},
        {"SLURM_NPROCS", "2"},
        {"SLURM_NTASKS", "2"},
        {"SLURM_NTASKS_PER_NODE", "1"},
        {"SLURM_PROCID", "1"},
        {"SLURM_SRUN_COMM_HOST", "10.77.0.11"},
        {"SLURM_STEPID", "0"},
        {"SLURM_STEP_GPUS", "0,1"},
        {"SLURM_STEP_ID", "0"},
        {"SLURM_STEP_NODELIST", "node[1-2]"},
        {"SLURM_STEP_NUM_NODES", "2"},
        {"SLURM_STEP_NUM_TASKS", "2"},
        {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TOPOLOGY_ADDR", "node2"},
        {"CUDA_VISIBLE_DEVICES", "0,1"},
        {"GPU_DEVICE_ORDINAL", "0,1"},
        {"HOSTNAME", "node1"},
        {"ROCR_VISIBLE_DEVICES", "0,1"},
    };
}

/// I -c2 t1
inline env::EnvMap column_I() {
    return {
        {"SLURMD_NODENAME", "node2"},
        {"SLURM_CPUS_ON_NODE", "2"},
        {"SLURM_CPUS_PER_TASK", "2"},
        {"SLURM_DISTRIBUTION", "cyclic"},
        {"SLURM_GTIDS", "1"},
        {"SLURM_JOBID", "4"},
        {"SLURM_JOB_CPUS_PER_NODE", "2(x2)"},
        {"SLURM_JOB_ID", "4"},
        {"SLURM_JOB_NODELIST", "node[1-2]"},
        {"SLURM_JOB_NUM_NODES", "2"},
        {"SLURM_LAUNCH_NODE_IPADDR", "10.77.0.11"},
        {"SLURM_LOCALID", "0"},
        {"SLURM_NNODES", "2"},
        {"SLURM_NODEID", "1"},
        {"SLURM_NODELIST", "node[1-2]"},
        {"SLURM_NPROCS", "2"},
        {"SLURM_NTASKS", "2"},
        {"SLURM_NTASKS_PER_NODE", "1"},
        {"SLURM_PROCID", "1"},
        {"SLURM_SRUN_COMM_HOST", "10.77.0.11"},
        {"SLURM_STEPID", "0"},
        {"SLURM_STEP_ID", "0"},
        {"SLURM_STEP_NODELIST", "node[1-2]"},
        {"SLURM_STEP_NUM_NODES", "2"},
        {"SLURM_STEP_NUM_TASKS", "2"},
        {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_TOPOLOGY_ADDR", "node2"},
        {"HOSTNAME", "node1"},
    };
}

/// J salloc
inline env::EnvMap column_J() {
    return {
        {"SLURM_JOBID", "7"},
        {"SLURM_JOB_CPUS_PER_NODE", "2(x2)"},
        {"SLURM_JOB_ID", "7"},
        {"SLURM_JOB_NODELIST", "node[1-2]"},
        {"SLURM_JOB_NUM_NODES", "2"},
        {"SLURM_NNODES", "2"},
        {"SLURM_NODELIST", "node[1-2]"},
        {"SLURM_NPROCS", "4"},
        {"SLURM_NTASKS", "4"},
        {"SLURM_NTASKS_PER_NODE", "2"},
        {"SLURM_TASKS_PER_NODE", "2(x2)"},
    };
}

}  // namespace ptrun::slurm::test_env
