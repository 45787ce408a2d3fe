#!/usr/bin/python3
"""Builds ptrun's wheel from a CMake build tree, offline, with Debian's python3-wheel:

    /usr/bin/python3 python/make_wheel.py --build build [--out build/wheel]
    (or: cmake --build build --target wheel)

Prints the wheel's path. The wheel holds `ptrun` and `ptrun-store` as scripts (pip puts the native
executables themselves on the environment's PATH: nothing Python runs at launch) and the pure
Python package python/ptrun with libptrun_store_c.so bundled for ptrun.store, and the Python runner
at the environment's lib/ptrun/python/ptrun. Its platform tag is
honest: manylinux_2_<N>_<arch>, N the newest GLIBC_2.N symbol version any of the three ELF files
needs (readelf), and refused when one of them links anything but glibc's libc, libm and loader
(and libgcc_s; libstdc++ must be linked statically) or is a static executable (whose getaddrinfo
would load the build machine's NSS modules)."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "ptrun"
SUMMARY = "Native, torchrun-compatible launcher for distributed training, and its c10d store"
# What a manylinux wheel may load from the system (glibc's own libraries only, here).
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                  "libgcc_s.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}
ARCHES = {"Advanced Micro Devices X86-64": "x86_64", "AArch64": "aarch64"}


def fail(message):
    sys.exit(f"make_wheel: {message}")


def readelf(*args):
    res = subprocess.run(["readelf", "-W", *args], capture_output=True, text=True)
    if res.returncode != 0:
        fail(f"readelf {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def glibc_needs(path):
    """(machine arch, newest GLIBC (2, N) required) of one ELF file; fails on a non-portable one."""
    header = readelf("-h", path)
    machine = re.search(r"Machine:\s+(.+)", header).group(1).strip()
    if machine not in ARCHES:
        fail(f"{path}: unsupported machine {machine!r}")
    dynamic = readelf("-d", path)
    if "(NEEDED)" not in dynamic:
        fail(f"{path} is linked statically: its getaddrinfo would load the NSS modules of the glibc "
             "it was built with at run time, which fails on other systems; build with the default "
             "linking (PTRUN_FULLY_STATIC=OFF)")
    needed = set(re.findall(r"\(NEEDED\).*\[(.+?)\]", dynamic))
    extra = sorted(needed - ALLOWED_NEEDED)
    if extra:
        fail(f"{path} loads {', '.join(extra)} at run time: a wheel may only rely on glibc and "
             "libgcc_s (link libstdc++ statically)")
    versions = [tuple(map(int, v)) for v in re.findall(r"Name: GLIBC_(\d+)\.(\d+)", readelf("-V", path))]
    return ARCHES[machine], max(versions, default=(2, 17))


def project_version(build):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        match = re.search(r"^CMAKE_PROJECT_VERSION:STATIC=(.+)$", f.read(), re.M)
    if not match:
        fail(f"{build} is not a configured ptrun build tree (no CMAKE_PROJECT_VERSION)")
    return match.group(1)


def stage(build, version, tmp):
    """Lays the unpacked wheel out in tmp; returns (its directory, the platform tag)."""
    binaries = {"ptrun": os.path.join(build, "launcher", "ptrun"),
                "ptrun-store": os.path.join(build, "rendezvous", "server_main", "ptrun-store")}
    c_lib = os.path.join(build, "rendezvous", "c_api", "libptrun_store_c.so")
    for path in [*binaries.values(), c_lib]:
        if not os.path.exists(path):
            fail(f"{path} is missing: build first (scripts/build.sh {build})")
    needs = [glibc_needs(p) for p in [*binaries.values(), c_lib]]
    arch, glibc = needs[0][0], max(n[1] for n in needs)
    tag = f"py3-none-manylinux_{glibc[0]}_{glibc[1]}_{arch}"

    root = os.path.join(tmp, f"{NAME}-{version}")
    pkg = os.path.join(root, NAME)
    shutil.copytree(os.path.join(HERE, NAME), pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    with open(os.path.join(pkg, "_version.py"), "w") as f:
        f.write(f'__version__ = "{version}"\n')
    os.mkdir(os.path.join(pkg, "_lib"))
    scripts = os.path.join(root, f"{NAME}-{version}.data", "scripts")
    os.makedirs(scripts)
    # Debug information stays in the build tree; the wheel gets the code (and the symbol table).
    for name, path in binaries.items():
        subprocess.run(["objcopy", "--strip-debug", path, os.path.join(scripts, name)], check=True)
        os.chmod(os.path.join(scripts, name), 0o755)
    subprocess.run(["objcopy", "--strip-debug", c_lib, os.path.join(pkg, "_lib", "libptrun_store_c.so")],
                   check=True)
    # The runner where ptrun looks for it, BIN/../lib/ptrun/python/ptrun (pip puts the "data"
    # scheme at the environment's root), marked as a wheel install: ptrun then runs Python workers
    # with BIN/python3, the interpreter of the environment it was installed into.
    runner_dir = os.path.join(root, f"{NAME}-{version}.data", "data", "lib", NAME, "python", NAME)
    os.makedirs(runner_dir)
    for name in ("_runner.py", "_zygote.py", "heartbeat.py"):
        shutil.copy(os.path.join(HERE, NAME, name), runner_dir)
    with open(os.path.join(runner_dir, "WHEEL-INSTALL"), "w") as f:
        f.write("ptrun was installed from its wheel: Python workers run with BIN/python3\n")
    # The man page at the environment's share/man/man1: man(1) looks in BIN/../share/man for
    # each BIN on PATH, so `man ptrun` finds it once the environment's bin is on PATH.
    man_dir = os.path.join(root, f"{NAME}-{version}.data", "data", "share", "man", "man1")
    os.makedirs(man_dir)
    shutil.copy(os.path.join(HERE, "..", "man", "ptrun.1"), man_dir)
    # Shell completion, the shipped ptrun's own script (`ptrun --print-completion SHELL`), where
    # bash-completion (it also looks beside each PATH entry: BIN/../share) and zsh look for it.
    for shell, where in (("bash", ("bash-completion", "completions", "ptrun")),
                         ("zsh", ("zsh", "site-functions", "_ptrun"))):
        path = os.path.join(root, f"{NAME}-{version}.data", "data", "share", *where)
        os.makedirs(os.path.dirname(path))
        script = subprocess.run([binaries["ptrun"], "--print-completion", shell], check=True,
                                capture_output=True, text=True).stdout
        with open(path, "w") as f:
            f.write(script)

    info = os.path.join(root, f"{NAME}-{version}.dist-info")
    os.mkdir(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\nSummary: {SUMMARY}\n"
                "Requires-Python: >=3.8\nClassifier: Operating System :: POSIX :: Linux\n"
                "Classifier: Programming Language :: C++\n\n"
                "ptrun launches distributed training as torchrun does (same flags, same worker "
                "environment), natively: `ptrun --nproc-per-node 4 train.py`. `ptrun-store` is its "
                "c10d TCPStore-compatible store; `import ptrun.store` reaches it from Python.\n")
    with open(os.path.join(info, "WHEEL"), "w") as f:
        f.write(f"Wheel-Version: 1.0\nGenerator: ptrun make_wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n")
    return root, tag


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="a CMake build tree of ptrun")
    ap.add_argument("--out", help="where the wheel goes (default BUILD/wheel)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    out = os.path.abspath(a.out or os.path.join(build, "wheel"))
    version = project_version(build)
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ptrun-wheel-") as tmp:
        root, tag = stage(build, version, tmp)
        wheel = os.path.join(out, f"{NAME}-{version}-{tag}.whl")
        res = subprocess.run([sys.executable, "-m", "wheel", "pack", "--dest-dir", out, root],
                             capture_output=True, text=True)
        if res.returncode != 0 or not os.path.exists(wheel):
            fail(f"python3 -m wheel pack failed (package python3-wheel): {res.stdout}{res.stderr}")
    print(wheel)


if __name__ == "__main__":
    main()
