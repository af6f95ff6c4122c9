package image

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/gatewaydns/gatewaydns/internal/tcpproxy"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
)

// netns is a fresh network namespace held by one locked OS thread: what runs through Do (a
// socket made, a process started) is in it. Sockets stay in the namespace they were made in,
// whichever thread reads them afterwards, so a proxy listening in it forwards to the host's.
type netns struct {
	do   chan func()
	done chan struct{}
}

// newNetns unshares a network namespace on a thread of its own, brings its loopback up, and
// ends the thread (with the namespace, once its processes are gone) at the end of the test.
func newNetns(t *testing.T) *netns {
	t.Helper()
	ns := &netns{do: make(chan func()), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		defer close(ns.done)
		// Never unlocked: the thread is in another namespace and must not run other goroutines;
		// Go ends a thread whose goroutine returns while locked.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ready <- fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
			return
		}
		ready <- loopbackUp()
		for f := range ns.do {
			f()
		}
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(ns.do)
		<-ns.done
	})
	return ns
}

// Do runs f on the namespace's thread and returns when f has.
func (ns *netns) Do(f func()) {
	ran := make(chan struct{})
	ns.do <- func() { defer close(ran); f() }
	<-ran
}

// loopbackUp sets IFF_UP on lo, which a new network namespace has down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS lo: %w", err)
	}
	return nil
}

// unpack extracts the image's layer from the OCI layout with GNU tar, which restores the
// security.capability PAX record as docker, podman and containerd do, into a new root
// filesystem.
func unpack(t *testing.T, b built) string {
	t.Helper()
	lp, err := layout.FromPath(b.Layout)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	inner, err := idx.ImageIndex(b.Index)
	if err != nil {
		t.Fatal(err)
	}
	im, err := inner.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("the index: %+v, %v; want one image", im, err)
	}
	img, err := inner.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil || len(m.Layers) != 1 {
		t.Fatalf("manifest %+v, %v; want one layer", m, err)
	}
	blob := filepath.Join(b.Layout, "blobs", m.Layers[0].Digest.Algorithm, m.Layers[0].Digest.Hex)
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("tar", "--xattrs", "--xattrs-include=security.capability",
		"--same-owner", "-xpzf", blob, "-C", root).CombinedOutput()
	if err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	return root
}

// rootProcess is /coredns started from the unpacked root filesystem.
type rootProcess struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// startInRoot runs /coredns -conf conf chrooted into root as 65532:65532 with no capability
// of its own (the kernel drops them all on the change from uid 0): only the file capability
// of /coredns lets it bind port 53. It is killed at the end of the test.
func startInRoot(t *testing.T, ns *netns, root, conf string) *rootProcess {
	t.Helper()
	p := &rootProcess{log: filepath.Join(t.TempDir(), "coredns.log"), exited: make(chan struct{})}
	lf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = &exec.Cmd{
		Path: BinaryPath, Args: []string{BinaryPath, "-conf", conf}, Dir: "/",
		Env: Config(Options{}).Env, Stdout: lf, Stderr: lf,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     root,
			Credential: &syscall.Credential{Uid: UID, Gid: GID, Groups: []uint32{}},
		},
	}
	ns.Do(func() { err = p.cmd.Start() })
	lf.Close()
	if err != nil {
		t.Fatalf("starting /coredns in %s: %v", root, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("coredns log:\n%s", testenv.LogTail(p.log, 40))
		}
	})
	return p
}

func (p *rootProcess) stop() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// statusLine is the value of one line of /proc/PID/status ("Uid", "CapEff").
func statusLine(t *testing.T, pid int, key string) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return ""
}

// The acceptance test of the image: its root filesystem, unpacked as a runtime would, runs
// /coredns as 65532 in a network namespace of its own, where it binds port 53 by the file
// capability alone and answers a whoami zone and a gatewaydns zone from a real etcd.
// Running the image with podman would say the same, but podman cannot run containers on these
// machines (setrlimit is refused): the test does the runtime's part (unpack, chroot, user,
// network namespace) itself, and TestPodmanLoadsTheImage checks that podman takes the image.
func TestTheUnpackedImageServesPort53AsNonroot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot, a user change and a network namespace need root")
	}
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no tar to unpack the layer with")
	}
	b := sharedImage(t)
	root := unpack(t, b)
	buf := make([]byte, 64)
	n, err := unix.Getxattr(filepath.Join(root, "coredns"), CapabilityXattr, buf)
	if err != nil || !bytes.Equal(buf[:n], NetBindServiceCapability()) {
		t.Fatalf("unpacked /coredns has %s % x (%v); want cap_net_bind_service=+ep", CapabilityXattr, buf[:max(n, 0)], err)
	}

	etcd := testenv.StartEtcd(t)
	cli := etcd.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/skydns/test/image/www/1", `{"host":"10.9.8.7"}`); err != nil {
		t.Fatal(err)
	}
	ns := newNetns(t)
	var proxy *tcpproxy.Proxy
	// Listening in the namespace, dialling etcd from the host's.
	ns.Do(func() { proxy, err = tcpproxy.Start(strings.TrimPrefix(etcd.ClientURL, "http://")) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	corefile := fmt.Sprintf("image.test {\n    gatewaydns {\n        endpoint http://%s\n    }\n}\nwhoami.test {\n    whoami\n}\n", proxy.Addr)
	if err := os.MkdirAll(filepath.Join(root, "etc/coredns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/coredns/Corefile"), []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}

	p := startInRoot(t, ns, root, "/etc/coredns/Corefile")
	ask := func(netw, name string, qtype uint16) (*dns.Msg, error) {
		var r *dns.Msg
		var err error
		ns.Do(func() {
			c := &dns.Client{Net: netw, Timeout: 2 * time.Second}
			r, _, err = c.Exchange(new(dns.Msg).SetQuestion(name, qtype), "127.0.0.1:53")
		})
		return r, err
	}
	// Ready when the gatewaydns zone has loaded from etcd (SERVFAIL until then).
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := ask("udp", "www.image.test.", dns.TypeA)
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
			break
		}
		select {
		case <-p.exited:
			t.Fatalf("/coredns exited: %s", testenv.LogTail(p.log, 20))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer for www.image.test within 30s: %v %v", r, err)
		}
		time.Sleep(100 * time.Millisecond) // poll interval of a bounded wait
	}
	if uid := statusLine(t, p.cmd.Process.Pid, "Uid"); uid != "65532 65532 65532 65532" {
		t.Errorf("/coredns runs as uids %q, want 65532 throughout", uid)
	}
	if eff := statusLine(t, p.cmd.Process.Pid, "CapEff"); eff != fmt.Sprintf("%016x", 1<<capNetBindService) {
		t.Errorf("/coredns has effective capabilities %s, want cap_net_bind_service only", eff)
	}
	for _, netw := range []string{"udp", "tcp"} {
		r, err := ask(netw, "www.image.test.", dns.TypeA)
		if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("%s www.image.test A: %v %v", netw, r, err)
		}
		if a, ok := r.Answer[0].(*dns.A); !ok || a.A.String() != "10.9.8.7" {
			t.Errorf("%s www.image.test A: %v, want the etcd record's 10.9.8.7", netw, r.Answer[0])
		}
		r, err = ask(netw, "whoami.test.", dns.TypeA)
		if err != nil || r.Rcode != dns.RcodeSuccess {
			t.Fatalf("%s whoami.test: %v %v", netw, r, err)
		}
		var sawA, sawSRV bool
		for _, rr := range r.Extra {
			switch rr := rr.(type) {
			case *dns.A:
				sawA = rr.A.String() == "127.0.0.1"
			case *dns.SRV:
				sawSRV = strings.HasPrefix(rr.Hdr.Name, "_"+netw+".")
			}
		}
		if !sawA || !sawSRV {
			t.Errorf("%s whoami.test: %v; want this client's 127.0.0.1 and an _%s SRV", netw, r, netw)
		}
	}

	// The control: without the file capability the same process may not bind port 53, so the
	// answers above came by the capability and not by a namespace that lets anyone bind it.
	p.stop()
	if err := unix.Removexattr(filepath.Join(root, "coredns"), CapabilityXattr); err != nil {
		t.Fatal(err)
	}
	q := startInRoot(t, ns, root, "/etc/coredns/Corefile")
	select {
	case <-q.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("/coredns without cap_net_bind_service is still running after 30s; want it refused port 53")
	}
	if log, _ := os.ReadFile(q.log); !bytes.Contains(log, []byte("permission denied")) {
		t.Errorf("/coredns without the capability exited, but not refused port 53:\n%s", log)
	}
}

// podman is how most machines without docker load an image; it takes the tarball and reports
// the configuration the image was built with.
func TestPodmanLoadsTheImage(t *testing.T) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman is not installed (.ci/run installs it)")
	}
	if os.Geteuid() != 0 {
		t.Skip("podman's root store needs root")
	}
	b := sharedImage(t)
	ref := fmt.Sprintf("gatewaydns-coredns:test-%d", os.Getpid())
	out, err := exec.Command(podman, "load", "-q", "-i", b.Tarball).CombinedOutput()
	if err != nil {
		t.Fatalf("podman load: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(podman, "image", "rm", "localhost/"+ref).CombinedOutput(); err != nil {
			t.Errorf("podman image rm: %v\n%s", err, out)
		}
	})
	out, err = exec.Command(podman, "image", "inspect", "localhost/"+ref).Output()
	if err != nil {
		t.Fatalf("podman image inspect: %v", err)
	}
	var inspected []struct {
		Architecture, Os string
		Config           struct {
			User, WorkingDir string
			Entrypoint, Env  []string
			ExposedPorts     map[string]struct{}
			Labels           map[string]string
		}
	}
	if err := json.Unmarshal(out, &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman image inspect: %v\n%s", err, out)
	}
	got := inspected[0]
	want := Config(Options{Source: "https://github.com/gatewaydns/gatewaydns", Revision: "0123abc",
		Version: "v0.1.0-test", Licenses: "NOASSERTION"})
	if got.Os != "linux" || got.Architecture != runtime.GOARCH {
		t.Errorf("podman sees %s/%s, want linux/%s", got.Os, got.Architecture, runtime.GOARCH)
	}
	c := got.Config
	if c.User != want.User || c.WorkingDir != want.WorkingDir || fmt.Sprint(c.Entrypoint) != fmt.Sprint(want.Entrypoint) ||
		fmt.Sprint(c.Env) != fmt.Sprint(want.Env) || fmt.Sprint(c.ExposedPorts) != fmt.Sprint(want.ExposedPorts) ||
		fmt.Sprint(c.Labels) != fmt.Sprint(want.Labels) {
		t.Errorf("podman image inspect config:\n%+v\nwant\n%+v", c, want)
	}
}
