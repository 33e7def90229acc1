"""Carbon accounting: per-host codecarbon tracking and per-node energy split."""
from quarl.carbon.cpu_time import (NODE_CPU_DIR, NodeCpuRecorder, node_type,
                                   process_cpu_seconds, read_node_cpu_seconds,
                                   split_energy_by_node_type)
from quarl.carbon.segments import Segment, cumulative_points, read_segments
from quarl.carbon.tracker import EMISSIONS_FILE, CarbonTracker

__all__ = [
    'CarbonTracker',
    'EMISSIONS_FILE',
    'NODE_CPU_DIR',
    'NodeCpuRecorder',
    'Segment',
    'cumulative_points',
    'node_type',
    'process_cpu_seconds',
    'read_node_cpu_seconds',
    'read_segments',
    'split_energy_by_node_type',
]
