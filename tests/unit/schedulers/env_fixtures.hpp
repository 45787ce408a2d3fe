#pragma once
/// One task's environment under each launcher, as each system's own documentation describes it
/// (the source is cited above each fixture), plus what this machine's Open MPI 4.1.4 set
/// (`mpirun -np 2 env`). Kept: variables ptrun must not take for the master (HOSTNAME).

#include "ptrun/env/env_map.hpp"

namespace ptrun::schedulers::fixtures {

/// Open MPI 4.1, `mpirun -np 4 --map-by slot` over two nodes with 2 slots each: rank 3, the second
/// of node 2. Variables: https://docs.open-mpi.org/en/v5.0.x/tuning-apps/environment-var.html
/// (OMPI_COMM_WORLD_*); OMPI_MCA_* and PMIX_* as Open MPI 4.1.4's mpirun sets them here.
inline env::EnvMap open_mpi_rank3() {
    return {
        {"OMPI_COMM_WORLD_SIZE", "4"},
        {"OMPI_COMM_WORLD_RANK", "3"},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
        {"OMPI_COMM_WORLD_NODE_RANK", "1"},
        {"OMPI_UNIVERSE_SIZE", "4"},
        {"OMPI_MCA_orte_num_nodes", "2"},
        {"OMPI_MCA_ess_base_jobid", "1044971521"},
        {"OMPI_MCA_orte_hnp_uri", "1044971520.0;tcp://192.0.2.2:42169"},
        {"PMIX_RANK", "3"},
        {"PMIX_NAMESPACE", "1044971521"},
        {"HOSTNAME", "node2"},
    };
}

/// Open MPI, `mpirun -np 2 --map-by ppr:1:node ptrun ...` on two nodes: one task per node, rank 1.
inline env::EnvMap open_mpi_per_node() {
    return {
        {"OMPI_COMM_WORLD_SIZE", "2"},
        {"OMPI_COMM_WORLD_RANK", "1"},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
        {"OMPI_MCA_orte_num_nodes", "2"},
        {"OMPI_MCA_ess_base_jobid", "77"},
        {"MASTER_ADDR", "node1"},
        {"PMIX_RANK", "1"},
    };
}

/// MPICH 4 Hydra / Intel MPI, `mpiexec -n 8 -ppn 4`: rank 5, the second of node 2. mpiexec's use:
/// https://wiki.mpich.org/mpich/index.php/Using_the_Hydra_Process_Manager and Intel's
/// https://www.intel.com/content/www/us/en/docs/mpi-library/developer-reference-linux/current/mpiexec-hydra.html;
/// PMI_RANK/PMI_SIZE and MPI_LOCALRANKID/MPI_LOCALNRANKS as Hydra's proxy sets them (MPICH's
/// source, src/pm/hydra). Not checked against a running Hydra: Debian's mpich is not installed
/// here.
inline env::EnvMap hydra_rank5() {
    return {
        {"PMI_RANK", "5"},        {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "1"},
        {"MPI_LOCALNRANKS", "4"}, {"PMI_FD", "7"},   {"MASTER_ADDR", "node1"},
        {"HOSTNAME", "node2"},
    };
}

/// Flux, `flux run -N2 -n4 ptrun ...`: task 2, the first of node 2.
/// flux-environment(7), "JOB ENVIRONMENT":
/// https://flux-framework.readthedocs.io/projects/flux-core/en/latest/man7/flux-environment.html
inline env::EnvMap flux_task2() {
    return {
        {"FLUX_JOB_ID",
         "\xc6\x92"
         "2hY3s5oW"},
        {"FLUX_JOB_SIZE", "4"},
        {"FLUX_JOB_NNODES", "2"},
        {"FLUX_TASK_RANK", "2"},
        {"FLUX_TASK_LOCAL_ID", "0"},
        {"FLUX_URI", "local:///tmp/flux-x/local-0"},
        {"FLUX_JOB_TMPDIR", "/tmp/flux-x/jobtmp-0"},
    };
}

/// Flux, `flux run -N2 -n2 ptrun --nproc-per-node 4 ...`: one task per node, node 1.
inline env::EnvMap flux_per_node() {
    return {
        {"FLUX_JOB_ID", "f3ETxsR9H"}, {"FLUX_JOB_SIZE", "2"},      {"FLUX_JOB_NNODES", "2"},
        {"FLUX_TASK_RANK", "1"},      {"FLUX_TASK_LOCAL_ID", "0"}, {"MASTER_ADDR", "node1"},
    };
}

/// PBS Pro / Torque, `pbsdsh -u ptrun ...` in a 3-node job with 2 slots per node: node 2.
/// pbsdsh(1): https://linux.die.net/man/1/pbsdsh (PBS_TASKNUM, PBS_NODENUM, PBS_VNODENUM);
/// qsub(1) (PBS_JOBID, PBS_NODEFILE, PBS_ENVIRONMENT).
inline env::EnvMap pbs_node2() {
    return {
        {"PBS_JOBID", "1234.pbs-server"},
        {"PBS_NODEFILE", "/var/spool/pbs/aux/1234.pbs-server"},
        {"PBS_NODENUM", "2"},
        {"PBS_TASKNUM", "3"},
        {"PBS_VNODENUM", "4"},
        {"PBS_ENVIRONMENT", "PBS_BATCH"},
        {"PBS_O_HOST", "login1"},
    };
}
/// The PBS_NODEFILE of pbs_node2: one line per slot.
inline const char* pbs_nodefile() { return "cn01\ncn01\ncn02\ncn02\ncn03\ncn03\n"; }

/// LSF with jsrun, `jsrun -n 8 -a 1 -r 4 ptrun ...` on 2 compute nodes: task 6, the third of
/// node 2. JSM_NAMESPACE_*: IBM's jsrun, and Lightning's LSFEnvironment
/// (https://lightning.ai/docs/pytorch/stable/api/lightning.pytorch.plugins.environments.LSFEnvironment.html);
/// LSB_DJOB_HOSTFILE / LSB_MCPU_HOSTS: LSF's "Environment variables for job execution"
/// (https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=variables-environment-set-job-execution).
inline env::EnvMap lsf_task6() {
    return {
        {"JSM_NAMESPACE_SIZE", "8"},
        {"JSM_NAMESPACE_RANK", "6"},
        {"JSM_NAMESPACE_LOCAL_SIZE", "4"},
        {"JSM_NAMESPACE_LOCAL_RANK", "2"},
        {"LSB_JOBID", "4242"},
        {"LSB_DJOB_HOSTFILE", "/home/u/.lsbatch/4242.hostfile"},
        {"LSB_MCPU_HOSTS", "batch1 1 c01 42 c02 42"},
    };
}
/// The LSB_DJOB_HOSTFILE of lsf_task6: the launch node (one slot), then the compute nodes.
inline const char* lsf_hostfile() { return "batch1\nc01\nc01\nc01\nc01\nc02\nc02\nc02\nc02\n"; }

/// Kubeflow PyTorchJob, 1 master + 2 workers: worker 1's pod (node 2).
/// https://www.kubeflow.org/docs/components/trainer/legacy-v1/user-guides/pytorch/
inline env::EnvMap kubeflow_worker1() {
    return {
        {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
        {"MASTER_ADDR", "pytorch-dist-master-0"},
        {"MASTER_PORT", "23456"},
        {"WORLD_SIZE", "3"},
        {"RANK", "2"},
        {"PET_NNODES", "3"},
        {"PET_NODE_RANK", "2"},
        {"PET_NPROC_PER_NODE", "2"},
        {"HOSTNAME", "pytorch-dist-worker-1"},
    };
}

/// An indexed Job of 4 completions under the headless service "svc": pod 3.
/// https://kubernetes.io/docs/tasks/job/job-with-pod-to-pod-communication/ (JOB_COMPLETION_INDEX,
/// pod hostnames ${jobName}-${index}); PET_NNODES and MASTER_ADDR set in the pod template.
inline env::EnvMap indexed_job_pod3() {
    return {
        {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
        {"JOB_COMPLETION_INDEX", "3"},
        {"PET_NNODES", "4"},
        {"MASTER_ADDR", "train-0.svc"},
        {"HOSTNAME", "train-3"},
    };
}

/// JobSet "js" with one replicated Job "workers" of 2 pods: pod 1.
/// https://github.com/kubernetes-sigs/jobset/blob/main/site/static/examples/simple/jobset-with-network.yaml
/// (hostnames <jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>, subdomain = JobSet name).
inline env::EnvMap jobset_pod1() {
    return {
        {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
        {"JOB_COMPLETION_INDEX", "1"},
        {"PET_NNODES", "2"},
        {"JOBSET_NAME", "js"},
        {"REPLICATED_JOB_NAME", "workers"},
        {"JOB_INDEX", "0"},
        {"HOSTNAME", "js-workers-0-1"},
    };
}

}  // namespace ptrun::schedulers::fixtures
