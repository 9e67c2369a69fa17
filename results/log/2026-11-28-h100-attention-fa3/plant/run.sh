#!/usr/bin/env bash
# The forward plant (attention-forward-skips-the-rescale-of-o) on the GPU: tests/attention.rs
# built with the patch applied must fail.
cd .dev2 && xz -d -f *.xz; chmod +x test-*; cd ..
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/env.txt
timeout 200 .dev2/test-attention-planted --test-threads=1 cuda_every_entry > $OUT/plant.txt 2>&1; rc=$?
echo "rc $rc (nonzero: the plant was caught)" | tee -a $OUT/plant.txt
grep -E "panicked|expected|allowed|test result|verified|FAILED" $OUT/plant.txt | head -12
