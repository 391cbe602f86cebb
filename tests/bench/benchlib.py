"""benchlib - what the benchmarks share: the environment, and raw QEMU
booting the very kernel, initramfs and disk that runtime uses (the
baseline every ratio is taken against)."""
import atexit, glob, os, shutil, statistics, subprocess, sys, tempfile, time

cache = os.environ.get("RUNTIME_CACHE_DIR", "/var/cache/runtime")
env = dict(os.environ)
if "RUNTIME_STATE_DIR" not in env:
    # A state dir of the benchmark's own, gone when it ends (its sandboxes
    # are removed by then; only the lock file is left).
    env["RUNTIME_STATE_DIR"] = tempfile.mkdtemp(prefix="rt-bench-state.")
    atexit.register(shutil.rmtree, env["RUNTIME_STATE_DIR"], True)
# Cold boots unless a benchmark asks for templates (tests/bench/start):
# the others measure what they measured before templates existed.
env.setdefault("RUNTIME_TEMPLATES", "off")


def rt(*args, **kw):
    return subprocess.run(["runtime", *args], env=env, capture_output=True, text=True, **kw)


def timed(argv, **kw):
    t = time.monotonic()
    r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    if r.returncode != 0:
        sys.exit(f"{argv} failed: {r.returncode} {r.stderr.decode(errors='replace')}")
    return time.monotonic() - t


def assets():
    """The kernel, initramfs and boot disk runtime booted last."""
    cur = os.path.join(cache, "kernel", "current")
    kdir = os.path.join(cache, "kernel", os.path.basename(os.path.realpath(cur)))
    initramfs = max(glob.glob(os.path.join(kdir, "initramfs-*.cpio")), key=os.path.getmtime)
    disk = max(glob.glob(os.path.join(cache, "disks", "*.ext4")), key=os.path.getmtime)
    accel = "tcg"
    if os.path.exists(os.path.join(cache, "accel")):
        accel = open(os.path.join(cache, "accel")).read().split()[0]
    return os.path.join(kdir, "vmlinux"), initramfs, disk, os.environ.get("RUNTIME_ACCEL", accel)


# What libruntime/vmm/qemu-args.c tells every guest so that it stays quiet
# when idle (tests/bench/idle strips it again for its baseline).
IDLE_APPEND = (" nowatchdog nosoftlockup psi=0 workqueue.power_efficient=1 sysctl.vm.stat_interval=10"
               " sysctl.vm.compaction_proactiveness=0")


def qemu_argv(workdir, append, channel=False, memory=4096, vcpu=2):
    """The command line libruntime/vmm/vm.c builds, for the same assets."""
    vmlinux, initramfs, disk, accel = assets()
    tsc = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("cpu MHz") and accel == "tcg":
            tsc = " tsc_early_khz=%d tsc=reliable" % round(float(line.split(":")[1]) * 1000)
            break
    argv = ["qemu-system-x86_64", "-M", "microvm,x-option-roms=off,isa-serial=on,rtc=on",
            "-accel", "tcg,tb-size=64" if accel == "tcg" else "kvm", "-cpu", "max" if accel == "tcg" else "host",
            "-m", str(memory), "-smp", str(vcpu), "-nodefaults", "-no-user-config", "-display", "none",
            "-no-reboot", "-serial", f"file:{workdir}/console.log", "-kernel", vmlinux, "-initrd", initramfs,
            "-append", f"console=ttyS0 quiet panic=-1 reboot=t{IDLE_APPEND}{tsc} {append}",
            "-drive", f"id=root,file={disk},format=raw,if=none,snapshot=on,discard=unmap",
            "-device", "virtio-blk-device,drive=root"]
    if channel:
        argv += ["-device", "virtio-serial-device",
                 "-chardev", f"socket,id=agent,path={workdir}/agent.sock,server=on,wait=off",
                 "-device", "virtserialport,chardev=agent,name=runtime.agent"]
    return argv, accel


def row(what, values, unit):
    m = statistics.median(values)
    print(f"| {what:<52} | {m:10.2f} | {min(values):8.2f} | {max(values):8.2f} | {unit:<5} |")
    return m


def header():
    print(f"| {'what':<52} | {'median':>10} | {'min':>8} | {'max':>8} | {'unit':<5} |")
    print(f"|{'-' * 54}|{'-' * 12}|{'-' * 10}|{'-' * 10}|{'-' * 7}|")


def pid_of(sid, name):
    with open(os.path.join(env["RUNTIME_STATE_DIR"], sid, name)) as f:
        return int(f.read().split()[0])


def threads_ns(pid):
    """{thread name: CPU ns} for every thread of @pid ("CPU n/TCG" by name)."""
    out = {}
    task = f"/proc/{pid}/task"
    for tid in os.listdir(task):
        try:
            with open(f"{task}/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"{task}/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except OSError:
            continue  # a thread that ended meanwhile
        out[f"{comm}/{tid}"] = ns
    return out
