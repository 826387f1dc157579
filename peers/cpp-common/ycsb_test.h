// Checks the C++ YCSB generator (ycsb.h) against peers/testdata/ycsb-vectors.json.
#pragma once

#include <string>

namespace shale::test {

// Keys, records (loaded and updated) and the first operations of every
// workload for one seed, one thread, inserts acknowledged at once.
void test_ycsb_vectors(const std::string& ycsb_vectors_path);

}  // namespace shale::test
