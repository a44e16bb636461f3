"""Child process for first-use races: `keyring DATA` prints the key it ends up with;
`cas DATA N` puts N values (the same ones in every child) and reads them back.

Usage: python -m tests.store.race_child keyring|cas DATA_DIR [N]
"""

from __future__ import annotations

import sys
from pathlib import Path

from workrail.store.local.keyring import load_or_create_keyring


def main() -> None:
    what, data_dir = sys.argv[1], Path(sys.argv[2])
    if what == "keyring":
        print(load_or_create_keyring(data_dir).current.hex(), flush=True)
        return
    # imported only here: the keyring racers start in a third of the time without it
    from workrail.store.local.backend import LocalBackend

    store = LocalBackend.open(data_dir).snapshots
    bad = 0
    for i in range(int(sys.argv[3])):
        value = {"n": i, "pad": "x" * 200}
        ref = store.put(value).unwrap()
        if store.get(ref).unwrap() != value:
            bad += 1
    print(f"BAD {bad}", flush=True)


if __name__ == "__main__":
    main()
