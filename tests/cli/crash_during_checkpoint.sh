#!/usr/bin/env bash
# SIGKILL a run again and again while it writes a checkpoint every step. Each
# time, the newest complete checkpoint must load and training must go on; at
# the end the losses equal an uninterrupted run's.
source "$(dirname "$0")/lib.sh"

# A model whose checkpoint (~40 MB with AdamW moments) takes longer to write
# than a step takes to compute, so most kills land mid-write.
args=(--model=gpt --context=16 --batch=2 --steps=60 --eval-tokens=2048 --threads=2 --log-level=warn)
ck="$WORK/ck"
mid_write_kills=0
for round in 1 2 3 4 5 6; do
  resume=(); compgen -G "$ck/checkpoint-*.clvck" >/dev/null && resume=(--resume)
  "$CLEAVE" "${args[@]}" --checkpoint-dir="$ck" --checkpoint-every=1 "${resume[@]}" &
  pid=$!
  sleep "0.$((RANDOM % 5 + 3))"
  # Most rounds wait for a write to be under way, so the kill lands inside it;
  # every third round kills wherever the run happens to be.
  if ((round % 3)); then
    for _ in $(seq 1 500); do compgen -G "$ck/.*.tmp" >/dev/null && break; sleep 0.002; done
  fi
  kill -9 $pid 2>/dev/null || { fail "round $round: run ended before the kill"; continue; }
  wait $pid 2>/dev/null
  compgen -G "$ck/.*.tmp" >/dev/null && mid_write_kills=$((mid_write_kills + 1))
done
echo "kills that landed mid-write: $mid_write_kills of 6"
((mid_write_kills > 0)) || fail "no kill landed during a checkpoint write; the test proved nothing"

"$CLEAVE" "${args[@]}" --checkpoint-dir="$ck" --checkpoint-every=1 --resume --report="$WORK/res.json" \
  || fail "resume after the kills failed"
"$CLEAVE" "${args[@]}" --report="$WORK/ref.json" || fail "reference run failed"
same=$(python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print(a["final_train_loss"] == b["final_train_loss"] and a["val_loss"] == b["val_loss"])' \
  "$WORK/res.json" "$WORK/ref.json")
[[ $same == True ]] && echo "ok: final loss equals the uninterrupted run" || fail "final loss differs after crash recovery"
finish
