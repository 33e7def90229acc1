"""Carbon accounting: per-host codecarbon tracking and per-node energy split."""
from quarl.carbon.cpu_time import (NODE_CPU_DIR, NodeCpuRecorder, node_type,
                                   process_cpu_seconds, read_node_cpu_seconds,
                                   split_energy_by_node_type)
from quarl.carbon.tracker import EMISSIONS_FILE, CarbonTracker

__all__ = [
    'CarbonTracker',
    'EMISSIONS_FILE',
    'NODE_CPU_DIR',
    'NodeCpuRecorder',
    'node_type',
    'process_cpu_seconds',
    'read_node_cpu_seconds',
    'split_energy_by_node_type',
]
