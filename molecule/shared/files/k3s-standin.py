# A stand-in k3s binary for the molecule scenarios (prepare.yml writes one per release, with the
# release's version in place of @K3S_VERSION@). It runs no cluster, but before "starting" it checks,
# offline, what the real binary checks before it starts, and refuses what k3s refuses, with k3s's
# own words where k3s has them. Each rule cites its upstream source; a configuration this accepts
# and k3s would refuse is a bug here.
#
#   k3s --version | -v            "k3s version <version> (stand-in)"
#   k3s server | k3s agent        the unit: check the config, then tell systemd READY=1 and stay up
#                                 (fails while /etc/k3s-standin-fail-start exists)
#   k3s server --cluster-reset [--cluster-reset-restore-path=P]
#                                 check the flags, the token and P, restore the snapshot's data into
#                                 db/etcd (the old data moved to db/etcd-old-<time>), write db/reset-flag,
#                                 print k3s's reset message
#   k3s etcd-snapshot save [--name N]   write db/snapshots/N-<node>-<time> holding the data's bootstrap
#                                 key (fails while /etc/k3s-standin-fail-snapshot exists, or without data)
#   k3s etcd-snapshot prune --name N --snapshot-retention R   keep the R newest snapshots named N-*
#   k3s kubectl get node ...      "True" (the Ready condition)
#   k3s kubectl get --raw /readyz/etcd   "ok" when this server's etcd data opens with its token
#   --config FILE / -c FILE       another config file (as k3s), with its FILE.d/*.yaml drop-ins;
#                                 K3S_STANDIN_CHECK_ONLY=1 stops after the checks
#   data-dir (config or --data-dir)   where the data lives (default /var/lib/rancher/k3s, as k3s)
#
# The data model: the bootstrap data k3s keeps in etcd is encrypted with the server token's
# password (k3s pkg/cluster/storage.go); here db/etcd/standin-bootstrap holds the sha256 of the
# password the data was created with, every snapshot carries it, and a start or restore with another
# token fails as k3s fails. The etcd S3 bucket is the directory K3S_STANDIN_S3_ROOT/<bucket>/<folder>
# (default /var/lib/k3s-standin-s3); while <root>/.needs-proxy exists the bucket answers only through
# a proxy (etcd-s3-proxy, or HTTPS_PROXY in the environment).
#
# Every call is appended to /var/log/k3s-standin.log (K3S_STANDIN_LOG overrides it).
import glob
import hashlib
import os
import shutil
import re
import socket
import sys
import time

VERSION = "@K3S_VERSION@"
CONFIG = "/etc/rancher/k3s/config.yaml"

# The config keys of k3s, as documented for the releases this stand-in may claim
# (https://docs.k3s.io/cli/server and https://docs.k3s.io/cli/agent, v1.33 to v1.36). k3s turns each
# key into a flag (pkg/configfilearg); an unknown key is a flag k3s does not have: old releases stop
# ("flag provided but not defined"), newer ones skip it with "Unknown flag ... found in config.yaml,
# skipping". Either way the setting is lost, so the stand-in refuses it. A server runs an agent too:
# it takes the agent's keys; an agent takes only its own.
DOCUMENTED_MINORS = range(33, 37)
AGENT_KEYS = frozenset("""
config debug v vmodule log alsologtostderr data-dir token token-file server node-name with-node-id
node-label node-taint image-credential-provider-bin-dir image-credential-provider-config docker
container-runtime-endpoint default-runtime image-service-endpoint disable-default-registry-endpoint
nonroot-devices pause-image snapshotter private-registry system-default-registry node-ip
node-external-ip node-internal-dns node-external-dns resolv-conf flannel-iface flannel-conf
flannel-cni-conf vpn-auth vpn-auth-file kubelet-arg kube-proxy-arg protect-kernel-defaults selinux
lb-server-port airgap-extra-registry enable-pprof prefer-bundled-bin rootless bind-address
""".split())
SERVER_KEYS = AGENT_KEYS | frozenset("""
https-listen-port supervisor-port apiserver-port apiserver-bind-address advertise-address
advertise-port tls-san tls-san-security cluster-cidr service-cidr service-node-port-range cluster-dns
cluster-domain flannel-backend flannel-ipv6-masq flannel-external-ip egress-selector-mode
servicelb-namespace write-kubeconfig write-kubeconfig-mode write-kubeconfig-group helm-job-image
agent-token agent-token-file cluster-init cluster-reset cluster-reset-restore-path kube-apiserver-arg
etcd-arg kube-controller-manager-arg kube-scheduler-arg kube-cloud-controller-manager-arg kine-tls
datastore-endpoint datastore-cafile datastore-certfile datastore-keyfile etcd-expose-metrics
etcd-disable-snapshots etcd-snapshot-name etcd-snapshot-schedule-cron etcd-snapshot-retention
etcd-snapshot-dir etcd-snapshot-compress etcd-s3 etcd-s3-endpoint etcd-s3-endpoint-ca
etcd-s3-skip-ssl-verify etcd-s3-access-key etcd-s3-secret-key etcd-s3-session-token etcd-s3-bucket
etcd-s3-region etcd-s3-folder etcd-s3-proxy etcd-s3-config-secret etcd-s3-insecure etcd-s3-timeout
etcd-s3-bucket-lookup-type etcd-s3-retention default-local-storage-path disable disable-scheduler
disable-cloud-controller disable-kube-proxy disable-network-policy disable-helm-controller
disable-apiserver disable-controller-manager disable-etcd embedded-registry supervisor-metrics
secrets-encryption secrets-encryption-provider disable-agent
""".split())

# The kubelet's --node-labels rule (k8s.io/kubelet/pkg/apis/well_known_labels.go, IsKubeletLabel, and
# cmd/kubelet/app/options/options.go): a key in the kubernetes.io or k8s.io namespace must be in this
# set or under kubelet.kubernetes.io / node.kubernetes.io, else the kubelet does not start.
KUBELET_LABELS = frozenset("""
kubernetes.io/hostname kubernetes.io/os kubernetes.io/arch beta.kubernetes.io/os beta.kubernetes.io/arch
beta.kubernetes.io/instance-type node.kubernetes.io/instance-type topology.kubernetes.io/zone
topology.kubernetes.io/region failure-domain.beta.kubernetes.io/zone failure-domain.beta.kubernetes.io/region
""".split())
# Label keys and values (k8s.io/apimachinery/pkg/util/validation: IsQualifiedName, IsValidLabelValue).
NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
PREFIX = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*"
KEY_RE = re.compile(r"^(%s/)?%s$" % (PREFIX, NAME))
VALUE_RE = re.compile(r"^(%s)?$" % NAME)
# Taint effects (k8s.io/kubernetes/pkg/util/taints ParseTaint, core/v1 TaintEffect).
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# The secure token form (k3s pkg/clientaccess/token.go): K10<sha256 of the CA>::<user>:<password>.
FULL_TOKEN = re.compile(r"^K10[0-9a-f]{64}::[^:]+:.+$")


DEFAULT_DATA_DIR = "/var/lib/rancher/k3s"
S3_ROOT = os.environ.get("K3S_STANDIN_S3_ROOT", "/var/lib/k3s-standin-s3")
SNAPSHOT_MAGIC = "k3s-standin-snapshot bootstrap="
# k3s pkg/cluster/storage.go (getBootstrapKeyFromStorage): the bootstrap key does not open with this token
DIFFERENT_TOKEN = "bootstrap data already found and encrypted with different token"


def log(argv):
    try:
        with open(os.environ.get("K3S_STANDIN_LOG", "/var/log/k3s-standin.log"), "a") as handle:
            handle.write(" ".join(argv) + "\n")
    except OSError:
        pass


def fail(message):
    sys.stderr.write("level=fatal msg=\"%s\" (k3s stand-in %s)\n" % (message, VERSION))
    sys.exit(1)


def scalar(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        inner = text[1:-1]
        return inner.replace("''", "'") if text[0] == "'" else inner.encode().decode("unicode_escape")
    if text in ("true", "True"):
        return True
    if text in ("false", "False"):
        return False
    return text


def read_config(path):
    """The subset of YAML a k3s config.yaml is made of (top-level keys, scalars and lists of scalars,
    as Ansible's to_nice_yaml writes them; folded continuation lines are joined). Anything else is
    refused: k3s takes no nested maps in its config file (pkg/configfilearg reads key: value pairs)."""
    config, key, items = {}, None, None
    with open(path) as handle:
        lines = handle.read().splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#") or line.strip() in ("---", "..."):
            continue
        if line.startswith("- ") or line.startswith("  - "):
            if key is None or items is None:
                fail("%s:%d: a list item outside a list" % (path, number))
            items.append(line.split("- ", 1)[1])
        elif line.startswith(" "):
            if key is None:
                fail("%s:%d: an indented line outside a key" % (path, number))
            if items:
                items[-1] += " " + line.strip()
            elif isinstance(config[key], str) and config[key]:
                config[key] += " " + line.strip()
            else:
                fail("%s:%d: nested maps are not k3s configuration" % (path, number))
        else:
            match = re.match(r"^([A-Za-z0-9][-A-Za-z0-9_]*):(?: (.*))?$", line)
            if not match:
                fail("%s:%d: not a 'key: value' line: %r" % (path, number, line))
            key = match.group(1)
            if key in config:
                fail("%s:%d: %s is set twice" % (path, number, key))
            if match.group(2) is None or not match.group(2).strip():
                items = []
                config[key] = items
            else:
                items = None
                config[key] = match.group(2)
    return dict((k, [scalar(i) for i in v] if isinstance(v, list) else scalar(v)) for k, v in config.items())


def read_config_with_dropins(path):
    """config.yaml, then its drop-ins FILE.d/*.yaml in name order, a later file replacing a key an
    earlier one set and 'key+' appending to a list (k3s pkg/configfilearg, parser.go: FindConfigFileFlag
    and dotDFiles). A drop-in that says server: "" clears the server URL."""
    config = read_config(path) if os.path.exists(path) else {}
    for dropin in sorted(glob.glob(os.path.join(path + ".d", "*.yaml"))):
        for key, value in read_config(dropin).items():
            if key.endswith("+"):
                config[key[:-1]] = as_list(config.get(key[:-1], [])) + as_list(value)
            else:
                config[key] = value
    return config


def cli_value(args, *names):
    """The value of a flag on the command line (--name=value or --name value), None when absent; a bare
    boolean flag reads as True."""
    found = None
    for index, arg in enumerate(args):
        for name in names:
            if arg == name:
                nxt = args[index + 1] if index + 1 < len(args) else ""
                found = True if (not nxt or nxt.startswith("-")) else nxt
            elif arg.startswith(name + "="):
                value = arg.split("=", 1)[1]
                found = {"true": True, "false": False}.get(value, value)
    return found


def setting(config, args, key, env=None):
    """A k3s setting as k3s resolves it: the command line over the config file over the environment."""
    value = cli_value(args, "--" + key)
    if value is None:
        value = config.get(key)
    if value is None and env:
        value = os.environ.get(env)
    return value


def token_secret(token):
    """The password part of a token (k3s pkg/clientaccess/token.go: K10<hash>::<user>:<password>)."""
    token = str(token or "").strip()
    return token.split("::", 1)[1].split(":", 1)[1] if FULL_TOKEN.match(token) else token


def token_key(token):
    return hashlib.sha256(token_secret(token).encode()).hexdigest()


def as_list(value):
    return value if isinstance(value, list) else [value]


def check_labels(labels):
    unknown = []
    for label in as_list(labels):
        key, eq, value = str(label).partition("=")
        if not eq or not KEY_RE.match(key) or not VALUE_RE.match(value):
            # k8s.io/kubernetes/pkg/kubelet: --node-labels takes key=value pairs of valid label syntax
            fail("invalid node label %r: want key=value with a qualified name and a valid label value" % label)
        namespace = key.rpartition("/")[0]
        restricted = any(namespace == d or namespace.endswith("." + d) for d in ("kubernetes.io", "k8s.io"))
        allowed = key in KUBELET_LABELS or any(namespace == d or namespace.endswith("." + d)
                                               for d in ("kubelet.kubernetes.io", "node.kubernetes.io"))
        if restricted and not allowed:
            unknown.append(key)
    if unknown:
        fail("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: %s; --node-labels in the "
             "'kubernetes.io' namespace must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io) "
             "or be in the specifically allowed set" % sorted(unknown))


def check_taints(taints):
    for taint in as_list(taints):
        spec, colon, effect = str(taint).rpartition(":")
        key, _eq, value = spec.partition("=")
        if not colon or effect not in EFFECTS:
            fail("invalid taint spec: %s, unsupported taint effect %r (want NoSchedule, PreferNoSchedule or NoExecute)"
                 % (taint, effect))
        if not KEY_RE.match(key) or not VALUE_RE.match(value):
            fail("invalid taint spec: %s: key must be a qualified name, value a valid label value" % taint)


def check_server_url(url):
    # k3s pkg/cli/agent: "server url must begin with https://"; the URL must parse with a host
    match = re.match(r"^https://(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)(:(\d{1,5}))?/?$", str(url))
    if not match:
        fail("--server %r: server url must begin with https:// and name a host (https://<host>:6443)" % url)
    if match.group(3) and not 0 < int(match.group(3)) < 65536:
        fail("--server %r: port out of range" % url)


def check_token(token):
    token = str(token).strip()
    if token.startswith("K10") and not FULL_TOKEN.match(token):
        # pkg/clientaccess/token.go: a K10 token is K10<CA hash>::<username>:<password>
        fail("failed to normalize server token; must be in format K10<CA-HASH>::<USERNAME>:<PASSWORD> or <PASSWORD>")
    if any(c.isspace() for c in token):
        fail("token holds whitespace: a token read from a file or the environment is taken whole")


def check_version_claim():
    match = re.match(r"^v1\.(\d+)\.\d+\+k3s\d+$", VERSION)
    if not match or int(match.group(1)) not in DOCUMENTED_MINORS:
        fail("this stand-in knows the config keys of v1.%d to v1.%d; update its key list before claiming %s"
             % (DOCUMENTED_MINORS[0], DOCUMENTED_MINORS[-1], VERSION))


def check(role, config, args):
    check_version_claim()
    keys = SERVER_KEYS if role == "server" else AGENT_KEYS
    unknown = sorted(set(config) - keys)
    if unknown:
        fail("unknown flag(s) %s in config.yaml for k3s %s (%s): not a k3s %s option" % (unknown, role, VERSION, role))
    if "node-label" in config:
        check_labels(config["node-label"])
    if "node-taint" in config:
        check_taints(config["node-taint"])
    server = setting(config, args, "server", "K3S_URL") or ""
    token = setting(config, args, "token", "K3S_TOKEN") or ""
    if not token and config.get("token-file"):
        try:
            with open(config["token-file"]) as handle:
                token = handle.read().strip()
        except OSError as exc:
            fail("token-file %s: %s" % (config["token-file"], exc))
    reset = config.get("cluster-reset") is True or "--cluster-reset" in args
    restore = config.get("cluster-reset-restore-path") or next(
        (a.split("=", 1)[1] for a in args if a.startswith("--cluster-reset-restore-path=")), "")
    if role == "agent":
        # pkg/cli/agent/agent.go: an agent needs --server and --token
        if not server:
            fail("--server is required")
        if not token:
            fail("--token is required")
    if server:
        check_server_url(server)
    if token:
        check_token(token)
    if role == "server":
        if config.get("cluster-init") is True and server:
            # the first server starts a cluster (cluster-init), every other one joins one (server):
            # both at once leaves k3s to guess; the collection never means it
            fail("cluster-init and server are exclusive: the first server starts the cluster, the others join it")
        if server and not token and not reset and not os.path.exists("/var/lib/rancher/k3s/server/token"):
            # a server joining with --server needs the cluster's token (it has none of its own yet;
            # one that joined before reads it from its data directory)
            fail("--token is required when joining a server with --server")
        if restore and not reset:
            # pkg/cli/server/server.go
            fail("invalid flag use; --cluster-reset required with --cluster-reset-restore-path")
        if reset and server:
            # pkg/cli/server/server.go (run): a reset on a server that joins another is refused
            fail("cannot perform cluster-reset while server URL is set - remove server from configuration "
                 "before resetting")
        token_file = os.path.join(data_dir(config, args), "server", "token")
        if reset and restore and not token and not os.path.exists(token_file):
            # pkg/cli/server/server.go (run): a restore needs the token the snapshot's data is encrypted with
            fail(token_file + " does not exist, please pass --token to complete the restoration")
    return reset, restore


def data_dir(config, args):
    return str(setting(config, args, "data-dir") or DEFAULT_DATA_DIR)


def server_token(config, args, server_dir):
    """The token a server uses: --token / token / K3S_TOKEN / token-file, else the password in
    server/token that a server which ran before keeps ('' when none)."""
    token = setting(config, args, "token", "K3S_TOKEN") or ""
    token_file = setting(config, args, "token-file")
    if not token and token_file and os.path.exists(str(token_file)):
        with open(str(token_file)) as handle:
            token = handle.read().strip()
    if not token and os.path.exists(os.path.join(server_dir, "token")):
        with open(os.path.join(server_dir, "token")) as handle:
            token = handle.read().strip()
    return token


def snapshot_key(path):
    """The bootstrap key a stand-in snapshot carries; a file that is no snapshot is refused, as etcd's
    snapshot restore refuses it (go.etcd.io/etcd/etcdutl snapshot: the file's hash does not verify)."""
    with open(path, "rb") as handle:
        head = handle.read(200).decode("utf-8", "replace").splitlines()
    if not head or not head[0].startswith(SNAPSHOT_MAGIC):
        fail("failed to restore snapshot %s: snapshot file integrity check failed (not an etcd snapshot)" % path)
    return head[0][len(SNAPSHOT_MAGIC):].strip()


def s3_on(config, args):
    return setting(config, args, "etcd-s3") is True


def s3_download(config, args, key, snapshots):
    """pkg/etcd/etcd.go (Reset): with etcd S3 on, the restore path is an object key in the bucket,
    downloaded before the restore; a local path is no key there."""
    proxy = setting(config, args, "etcd-s3-proxy") or os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    bucket = str(setting(config, args, "etcd-s3-bucket") or "")
    folder = str(setting(config, args, "etcd-s3-folder") or "")
    if os.path.exists(os.path.join(S3_ROOT, ".needs-proxy")) and not proxy:
        fail("failed to download %s from S3: dial tcp: i/o timeout (the bucket answers only through the proxy)" % key)
    source = os.path.join(S3_ROOT, bucket, folder, key.lstrip("/")) if "/" not in key else ""
    if not source or not os.path.isfile(source):
        fail("failed to download %s from S3 bucket %r: The specified key does not exist." % (key, bucket))
    os.makedirs(snapshots, exist_ok=True)
    target = os.path.join(snapshots, os.path.basename(key))
    shutil.copyfile(source, target)
    return target


def reset(config, args, restore):
    server_dir = os.path.join(data_dir(config, args), "server")
    db = os.path.join(server_dir, "db")
    reset_flag = os.path.join(db, "reset-flag")
    if not restore and os.path.exists(reset_flag):
        # pkg/cluster/managed.go (start): a reset without a restore path is refused once the flag exists
        fail("Managed etcd cluster membership was previously reset, please remove the cluster-reset flag and "
             "start k3s normally. If you need to perform another cluster reset, you must first manually delete "
             "the %s file" % reset_flag)
    etcd = os.path.join(db, "etcd")
    if restore:
        if s3_on(config, args):
            restore = s3_download(config, args, restore, os.path.join(db, "snapshots"))
        if not os.path.exists(restore):
            # pkg/etcd/etcd.go (Reset)
            fail("etcd: snapshot path does not exist: %s" % restore)
        if os.path.isdir(restore):
            fail("etcd: snapshot path must be a file, not a directory: %s" % restore)
        key = snapshot_key(restore)
        if key != token_key(server_token(config, args, server_dir)):
            fail(DIFFERENT_TOKEN)
        if os.path.isdir(etcd):
            # pkg/etcd/etcd.go (Restore): the old data directory is kept beside the restored one
            stamp = int(time.time())
            while os.path.exists("%s-old-%d" % (etcd, stamp)):
                stamp += 1
            os.rename(etcd, "%s-old-%d" % (etcd, stamp))
        os.makedirs(etcd)
        with open(os.path.join(etcd, "standin-bootstrap"), "w") as handle:
            handle.write(key + "\n")
    else:
        os.makedirs(etcd, exist_ok=True)
    with open(reset_flag, "w"):
        pass
    print("Managed etcd cluster membership has been reset, restart without --cluster-reset flag now.")
    return 0


def start_server(config, args):
    """What a server's start checks against its data: the reset flag goes (pkg/cluster/managed.go), and
    data written with another token is refused (pkg/cluster/storage.go)."""
    server_dir = os.path.join(data_dir(config, args), "server")
    db = os.path.join(server_dir, "db")
    if os.path.exists(os.path.join(db, "reset-flag")):
        os.remove(os.path.join(db, "reset-flag"))
    bootstrap = os.path.join(db, "etcd", "standin-bootstrap")
    token = server_token(config, args, server_dir)
    if os.path.exists(bootstrap):
        with open(bootstrap) as handle:
            if token and handle.read().strip() != token_key(token):
                fail("starting kubernetes: preparing server: failed to bootstrap cluster data: " + DIFFERENT_TOKEN)
    else:
        os.makedirs(os.path.join(db, "etcd"), exist_ok=True)
        with open(bootstrap, "w") as handle:
            handle.write(token_key(token or secrets_token()) + "\n")


def secrets_token():
    return hashlib.sha256(os.urandom(32)).hexdigest()


def etcd_ready(config, args):
    """kubectl get --raw /readyz/etcd: 'ok' when this server's etcd data exists and opens with its token."""
    server_dir = os.path.join(data_dir(config, args), "server")
    bootstrap = os.path.join(server_dir, "db", "etcd", "standin-bootstrap")
    if not os.path.exists(bootstrap):
        return False
    token = server_token(config, args, server_dir)
    with open(bootstrap) as handle:
        return not token or handle.read().strip() == token_key(token)


def snapshot(config, args):
    """etcd-snapshot save / prune on this server's data (save needs the data, as it needs a running etcd)."""
    server_dir = os.path.join(data_dir(config, args), "server")
    snapshots = os.path.join(server_dir, "db", "snapshots")
    name = str(cli_value(args, "--name") or "on-demand")
    if "prune" in args:
        keep = int(cli_value(args, "--snapshot-retention") or 5)
        found = sorted(glob.glob(os.path.join(snapshots, name + "-*")), key=os.path.getmtime)
        for path in found[:max(len(found) - keep, 0)]:
            os.remove(path)
            print("Removed local snapshot %s" % path)
        return 0
    if "save" not in args:
        return 0
    bootstrap = os.path.join(server_dir, "db", "etcd", "standin-bootstrap")
    if not os.path.exists(bootstrap):
        sys.stderr.write("etcd-snapshot: failed to get etcd status: this server runs no etcd (stand-in)\n")
        return 1
    with open(bootstrap) as handle:
        key = handle.read().strip()
    node = str(setting(config, args, "node-name") or socket.gethostname())
    os.makedirs(snapshots, exist_ok=True)
    path = os.path.join(snapshots, "%s-%s-%d" % (name, node, int(time.time())))
    with open(path, "w") as handle:
        handle.write(SNAPSHOT_MAGIC + key + "\n")
    os.chmod(path, 0o600)
    print("Snapshot %s saved." % os.path.basename(path))
    return 0


def notify_ready():
    address = os.environ.get("NOTIFY_SOCKET", "")
    if address:
        target = "\0" + address[1:] if address.startswith("@") else address
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"READY=1", target)


def config_path(rest):
    path = CONFIG
    for index, arg in enumerate(rest):
        if arg in ("--config", "-c") and index + 1 < len(rest):
            path = rest[index + 1]
        elif arg.startswith("--config="):
            path = arg.split("=", 1)[1]
    return path


def main(argv):
    log(argv[1:])
    args = argv[1:]
    command = args[0] if args else ""
    rest = args[1:]
    config = read_config_with_dropins(config_path(rest))
    if command in ("server", "agent"):
        is_reset, restore = check(command, config, rest)
        if os.environ.get("K3S_STANDIN_CHECK_ONLY") == "1":
            print("config accepted (stand-in %s)" % VERSION)
            return 0
        if is_reset:
            return reset(config, rest, restore)
        if os.path.exists("/etc/k3s-standin-fail-start"):
            fail("k3s failed to start (stand-in)")
        if command == "server":
            start_server(config, rest)
        notify_ready()
        while True:
            time.sleep(3600)
    if command == "etcd-snapshot":
        if os.path.exists("/etc/k3s-standin-fail-snapshot"):
            sys.stderr.write("etcd snapshot failed (stand-in)\n")
            return 1
        return snapshot(config, rest)
    if command == "kubectl" and "--raw" in " ".join(args) and "/readyz/etcd" in " ".join(args):
        if etcd_ready(config, rest):
            print("ok")
            return 0
        sys.stderr.write("[-]etcd failed: etcd data missing or not readable with this server's token (stand-in)\n")
        return 1
    if command == "kubectl" and "get" in args and "node" in args and any("Ready" in a for a in args):
        print("True")
        return 0
    print("k3s version %s (stand-in)" % VERSION)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
