"""Rewrites each jar of a folder uncompressed (ZIP_STORED) into another folder, so that xz compresses the bundle
bench/gpu.sh carries to a GPU machine about twice as well as the jars' own deflate; RocksDB's jar keeps only its
linux64 library. Usage: stored_jars.py FROM_DIR TO_DIR"""

import os
import sys
import zipfile


def main(source: str, target: str) -> None:
    os.makedirs(target, exist_ok=True)
    for name in sorted(os.listdir(source)):
        if not name.endswith(".jar"):
            continue
        with zipfile.ZipFile(os.path.join(source, name)) as jar_in, zipfile.ZipFile(
            os.path.join(target, name), "w", zipfile.ZIP_STORED
        ) as jar_out:
            for info in jar_in.infolist():
                native = info.filename.endswith((".so", ".jnilib", ".dll"))
                if name.startswith("rocksdbjni") and native and info.filename != "librocksdbjni-linux64.so":
                    continue
                entry = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                entry.external_attr = info.external_attr
                jar_out.writestr(entry, jar_in.read(info.filename))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
