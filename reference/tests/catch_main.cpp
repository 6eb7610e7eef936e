// The one Catch2 v2 main for every test binary of the project. Catch2 v2 takes one --warn (-w)
// only (a second is "Unrecognised token"); this main takes any number, e.g. --warn NoTests --warn
// NoAssertions as ctest runs the CPU tests: it passes the first to Catch2 and adds the others to
// the configuration itself.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char* argv[]) {
  std::vector<char*> args;
  int extra = Catch::WarnAbout::Nothing;
  bool first = true;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--warn" || a == "-w") && i + 1 < argc && !first) {
      const std::string w = argv[++i];
      if (w == "NoAssertions") {
        extra |= Catch::WarnAbout::NoAssertions;
      } else if (w == "NoTests") {
        extra |= Catch::WarnAbout::NoTests;
      } else {
        std::cerr << "Unrecognised warning: '" << w << "'\n";
        return 255;
      }
      continue;
    }
    if (a == "--warn" || a == "-w") first = false;
    args.push_back(argv[i]);
  }
  Catch::Session session;
  if (const int rc = session.applyCommandLine(int(args.size()), args.data()); rc != 0) return rc;
  Catch::ConfigData& c = session.configData();
  c.warnings = static_cast<Catch::WarnAbout::What>(c.warnings | extra);
  return session.run();
}
