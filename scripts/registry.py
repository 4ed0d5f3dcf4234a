#!/usr/bin/env python3
"""The registry of store canisters (canisters/engines.toml), for the scripts.

    python3 scripts/registry.py canisters        one line per store canister:
                                                 <canister> <package> <target> <wasi2ic 0|1>
                                                 <manifest>
    python3 scripts/registry.py configurations   one line per configuration:
                                                 <key> <canister> <engine name> <label>

scripts/report.py imports `engines()` from here.
"""

import os
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python before 3.11
    tomllib = None

REGISTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "canisters", "engines.toml")


def engines(path=REGISTRY):
    """Every [[engine]] entry of the registry, in its order."""
    if tomllib is None:
        sys.exit("scripts/registry.py needs Python 3.11 or later (tomllib)")
    with open(path, "rb") as registry:
        return tomllib.load(registry)["engine"]


def configuration_labels(path=REGISTRY):
    """(key, label) of every configuration, in the registry's order: the engine's label, with
    the configuration's journal mode (the key's last part) when the engine has several."""
    labels = []
    for engine in engines(path):
        several = len(engine["configurations"]) > 1
        for configuration in engine["configurations"]:
            label = engine["label"]
            if several:
                label += " " + configuration["key"].rsplit("_", 1)[-1].upper()
            labels.append((configuration["key"], label))
    return labels


def main(argv):
    if argv == ["canisters"]:
        for engine in engines():
            wasi2ic = 1 if engine["wasi2ic"] else 0
            manifest = engine.get("manifest", "Cargo.toml")
            print(f'{engine["canister"]} {engine["package"]} {engine["target"]} {wasi2ic} {manifest}')
    elif argv == ["configurations"]:
        for engine in engines():
            for configuration in engine["configurations"]:
                print(f'{configuration["key"]}\t{engine["canister"]}\t{engine["name"]}\t{engine["label"]}')
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
