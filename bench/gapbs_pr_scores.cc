// GAPBS's own PageRank kernel (PageRankPullGS from its pr.cc, included unchanged), run once
// on the graph the usual GAPBS flags name, with its scores written as raw float32 to the
// file $KITH_SCORES_OUT, so that `kith bench analytics` can compare them with kith's ranks.
// Built by the benchmark beside GAPBS's own binaries:
//   g++ -std=c++11 -O3 -fopenmp -I<gapbs>/src gapbs_pr_scores.cc -o pr_scores

#include <cstdio>
#include <cstdlib>

#define main gapbs_pr_main
#include "pr.cc"
#undef main

int main(int argc, char* argv[]) {
  CLPageRank cli(argc, argv, "pagerank scores", 1e-4, 20);
  if (!cli.ParseArgs())
    return -1;
  const char* out = std::getenv("KITH_SCORES_OUT");
  if (out == nullptr) {
    std::fprintf(stderr, "KITH_SCORES_OUT must name the output file\n");
    return 2;
  }
  Builder b(cli);
  Graph g = b.MakeGraph();
  pvector<ScoreT> scores = PageRankPullGS(g, cli.max_iters(), cli.tolerance());
  std::FILE* f = std::fopen(out, "wb");
  if (f == nullptr) {
    std::perror(out);
    return 2;
  }
  size_t n = static_cast<size_t>(g.num_nodes());
  if (std::fwrite(&*scores.begin(), sizeof(ScoreT), n, f) != n || std::fclose(f) != 0) {
    std::perror(out);
    return 2;
  }
  return 0;
}
