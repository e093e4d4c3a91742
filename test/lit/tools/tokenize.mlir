// RUN: printf 'hello world\n' > %t.txt
// RUN: llmc tokenize %t.txt -o %t.bin | FileCheck %s --check-prefix=ONE
// RUN: od -An -tu2 -j1024 %t.bin | FileCheck %s --check-prefix=BYTES
// RUN: gzip -c %t.txt > %t.txt.gz
// RUN: llmc tokenize %t.txt.gz -o %t2.bin --val %t3.bin --val-fraction 0.25 | FileCheck %s --check-prefix=SPLIT
// RUN: not llmc tokenize %t.missing -o %t.bin 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not llmc tokenize %t.txt 2>&1 | FileCheck %s --check-prefix=NOOUT
// RUN: not llmc tokenize %t.txt -o %t.bin --val %t3.bin --val-fraction 2 2>&1 | FileCheck %s --check-prefix=FRACTION
// RUN: not llmc tokenize %t.txt -o %t.bin --val %t.bin 2>&1 | FileCheck %s --check-prefix=SAME
// RUN: not llmc tokenize %t.txt -o %t.bin --shard-tokens 0 2>&1 | FileCheck %s --check-prefix=SHARDTOKENS
// RUN: not llmc tokenize %t.txt -o %t.bin --shard-tokens 2147483648 2>&1 | FileCheck %s --check-prefix=SHARDTOKENS
// RUN: not llmc tokenize %t.txt -o %t.bin --shard-tokens 1e3 2>&1 | FileCheck %s --check-prefix=SHARDTOKENS

// Past --shard-tokens, numbered shards (and no %t.s.bin); the validation
// tail is split the same way.
// RUN: rm -rf %t.dir && mkdir %t.dir
// RUN: llmc tokenize %t.txt -o %t.dir/s.bin --val %t.dir/v.bin --val-fraction 0.5 --shard-tokens 4 | FileCheck %s --check-prefix=SHARDS
// RUN: ls %t.dir | FileCheck %s --check-prefix=SHARDFILES
// RUN: od -An -tu2 -j1024 %t.dir/s_000001.bin | FileCheck %s --check-prefix=SHARD1
// RUN: gzip -c %t.txt > %t.dir/in.gz
// RUN: llmc tokenize %t.dir/in.gz -o %t.dir/g.bin --shard-tokens 5 | FileCheck %s --check-prefix=GZSHARDS

// ONE: .bin: 12 tokens
// "hello world\n" as bytes.
// BYTES: 104 101 108 108 111 32 119 111
// BYTES: 114 108 100 10
// 12 bytes: 9 for training, the last 3 held out.
// SPLIT: 2.bin: 9 tokens
// SPLIT: 3.bin: 3 tokens
// MISSING: llmc tokenize: error: cannot open '{{.*}}missing'
// NOOUT: llmc tokenize: error: need an input file and -o
// FRACTION: llmc tokenize: error: --val-fraction must be in (0, 1), got '2'
// SAME: llmc tokenize: error: --val and -o name the same file
// SHARDTOKENS: llmc tokenize: error: --shard-tokens must be an integer in [1, 2147483647], got
// SHARDS: s_000000.bin: 4 tokens
// SHARDS-NEXT: s_000001.bin: 2 tokens
// SHARDS-NEXT: v_000000.bin: 4 tokens
// SHARDS-NEXT: v_000001.bin: 2 tokens
// SHARDFILES-NOT: s.bin
// SHARDFILES-NOT: tmp
// "hello world\n": "hell" "o " | "worl" "d\n"
// SHARD1: 111 32{{$}}
// GZSHARDS: g_000000.bin: 5 tokens
// GZSHARDS-NEXT: g_000001.bin: 5 tokens
// GZSHARDS-NEXT: g_000002.bin: 2 tokens
