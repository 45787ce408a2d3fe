#pragma once
/// Each environment's reader, defined in its own file (private to schedulers/).

#include "ptrun/schedulers/reader.hpp"

namespace ptrun::schedulers::detail {

const Reader& slurm_reader();  ///< slurm_reader.cpp
const Reader& mpi_reader();    ///< mpi_reader.cpp
const Reader& flux_reader();   ///< flux_reader.cpp
const Reader& pbs_reader();    ///< pbs_reader.cpp
const Reader& lsf_reader();    ///< lsf_reader.cpp
const Reader& k8s_reader();    ///< k8s_reader.cpp

}  // namespace ptrun::schedulers::detail
