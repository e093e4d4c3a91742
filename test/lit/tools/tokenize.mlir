// RUN: printf 'hello world\n' > %t.txt
// RUN: llmc tokenize %t.txt -o %t.bin | FileCheck %s --check-prefix=ONE
// RUN: od -An -tu2 -j1024 %t.bin | FileCheck %s --check-prefix=BYTES
// RUN: gzip -c %t.txt > %t.txt.gz
// RUN: llmc tokenize %t.txt.gz -o %t2.bin --val %t3.bin --val-fraction 0.25 | FileCheck %s --check-prefix=SPLIT
// RUN: not llmc tokenize %t.missing -o %t.bin 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not llmc tokenize %t.txt 2>&1 | FileCheck %s --check-prefix=NOOUT
// RUN: not llmc tokenize %t.txt -o %t.bin --val %t3.bin --val-fraction 2 2>&1 | FileCheck %s --check-prefix=FRACTION

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
