#!/bin/bash
# kill-mid-write.sh LLMC DIR SIGNAL: starts `llmc tokenize` on a FIFO that
# never ends, waits until its output's temporary file exists, sends SIGNAL,
# and lists DIR before and after. The temporary must be gone afterwards.
llmc=$1 dir=$2 sig=$3
mkfifo "$dir/in"
exec 3<>"$dir/in" # a writer that stays open: tokenize blocks reading
"$llmc" tokenize "$dir/in" -o "$dir/out.bin" &
pid=$!
printf 'some text' >&3
for _ in $(seq 200); do
  ls "$dir" | grep -q '\.tmp\.' && break
  sleep 0.05
done
echo "before:" $(ls "$dir")
kill -"$sig" "$pid"
wait "$pid"
echo "status $?"
echo "after:" $(ls "$dir")
