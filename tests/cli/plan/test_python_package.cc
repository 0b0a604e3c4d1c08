// Python ranks of a build tree's trainrun get its package first on their
// PYTHONPATH (cli/plan/python_package.h); a user's own -x PYTHONPATH stands.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>

#include "cli/plan/python_package.h"

using namespace trainrun::cli;

TEST_CASE("a command runs Python when its program is python, python3 or python3.11, by name or path") {
  CHECK(runs_python({"python3", "train.py"}));
  CHECK(runs_python({"/usr/bin/python3", "-m", "pytest"}));
  CHECK(runs_python({"python3.11", "-c", "pass"}));
  CHECK(runs_python({"python"}));
  CHECK_FALSE(runs_python({"./train"}));
  CHECK_FALSE(runs_python({"/opt/python3/bin/train"}));
  CHECK_FALSE(runs_python({"python3-config"}));
  CHECK_FALSE(runs_python({}));
}

TEST_CASE("the package root goes first, then the launcher's PYTHONPATH") {
  Options options;
  options.command = {"/usr/bin/python3", "train.py"};
  options.env_forward = {"NCCL_DEBUG=INFO"};
  add_python_package(options, "/src/build/integrations/python", "/home/me/lib");
  CHECK(options.env_forward ==
        std::vector<std::string>{"NCCL_DEBUG=INFO", "PYTHONPATH=/src/build/integrations/python:/home/me/lib"});

  Options bare;
  bare.command = {"python3", "train.py"};
  add_python_package(bare, "/b/integrations/python", nullptr);
  CHECK(bare.env_forward == std::vector<std::string>{"PYTHONPATH=/b/integrations/python"});
  Options empty_env;
  empty_env.command = {"python3", "train.py"};
  add_python_package(empty_env, "/b/integrations/python", "");
  CHECK(empty_env.env_forward == std::vector<std::string>{"PYTHONPATH=/b/integrations/python"});
}

TEST_CASE("nothing is added for a program that is not Python, an installed trainrun, or a user's own -x PYTHONPATH") {
  Options program;
  program.command = {"./train"};
  add_python_package(program, "/b/integrations/python", nullptr);
  CHECK(program.env_forward.empty());

  Options installed;
  installed.command = {"python3", "train.py"};
  add_python_package(installed, "", "/x");
  CHECK(installed.env_forward.empty());

  for (const std::string theirs : {"PYTHONPATH=/mine", "PYTHONPATH"}) {
    Options user;
    user.command = {"python3", "train.py"};
    user.env_forward = {theirs};
    add_python_package(user, "/b/integrations/python", "/x");
    CHECK(user.env_forward == std::vector<std::string>{theirs});
  }
  Options similar;
  similar.command = {"python3", "train.py"};
  similar.env_forward = {"PYTHONPATHS=/x"};
  add_python_package(similar, "/b/integrations/python", nullptr);
  CHECK(similar.env_forward.size() == 2);
}

TEST_CASE("the build tree's package is found beside the trainrun binary, only when its __init__.py is there") {
  char dir_template[] = "/tmp/trainrun-python-package-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  CHECK(build_tree_python_package(dir + "/trainrun") == "");
  ::mkdir((dir + "/integrations").c_str(), 0700);
  ::mkdir((dir + "/integrations/python").c_str(), 0700);
  ::mkdir((dir + "/integrations/python/trainrun").c_str(), 0700);
  CHECK(build_tree_python_package(dir + "/trainrun") == "");
  std::ofstream(dir + "/integrations/python/trainrun/__init__.py") << "\n";
  CHECK(build_tree_python_package(dir + "/trainrun") == dir + "/integrations/python");
  CHECK(build_tree_python_package("/usr/bin/trainrun") == "");
  std::system(("rm -rf '" + dir + "'").c_str());
}
