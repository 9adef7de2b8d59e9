#!/bin/sh
# The graph studies behind docs/results_graphs.md, one process at a time, resumable (a
# finished run is skipped, an interrupted one continues from its last epoch): MACL Table 4
# analogue on five TU sets, then LASCon's Davis task. Run from a checkout whose
# ../shared/data holds tu/ and regression/davis/ (the configs' data_root); runs go to
# runs/studies/graphs_tu/ and runs/studies/graphs_davis/, reports to docs/studies/.
#   sh benchmarks/graphs_studies.sh [study ...]      (default: all, in this order)
# then the combined tables: python benchmarks/graphs_table4.py
set -e
STUDIES=${*:-"macl_table4_mutag macl_table4_ptc_mr macl_table4_proteins macl_table4_imdb macl_table4_nci1 lascon_davis"}
PY=${PYTHON:-python}
for s in $STUDIES; do
    echo "[graphs] $s $(date -u +%H:%M:%S)"
    OMP_NUM_THREADS=1 nice -n 5 $PY -m contrastkit study "configs/studies/$s.yaml"
done
