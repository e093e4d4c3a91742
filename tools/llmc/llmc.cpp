//===- llmc.cpp - The llmc command-line tool ------------------------------===//
#include "compiler/Driver.h"

int main(int argc, char **argv) { return llmc::runDriver(argc, argv); }
