package tests

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/writer"
)

// runRolesScript runs deploy/etcd/roles.sh with bin/etcdctl as root against e.
func runRolesScript(t *testing.T, e *testenv.Etcd, rootPassword, passwords string, args ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "deploy", "etcd", "roles.sh"), args...)
	cmd.Env = append(os.Environ(),
		"ETCDCTL="+testenv.FindBinary(t, "etcdctl"),
		"ETCDCTL_ENDPOINTS="+e.ClientURL,
		"ETCDCTL_USER=root:"+rootPassword,
		"PASSWORDS_DIR="+passwords,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("roles.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func isPermissionDenied(err error) bool {
	return errors.Is(err, rpctypes.ErrPermissionDenied) ||
		(err != nil && strings.Contains(err.Error(), rpctypes.ErrPermissionDenied.Error()))
}

// TestEtcdRoles runs deploy/etcd/roles.sh (twice: it is idempotent) against an etcd with auth
// enabled, and checks what each user may do: a cluster writes its own records and its own
// election and nothing else; the server reads the zone and writes nothing.
func TestEtcdRoles(t *testing.T) {
	e := testenv.StartEtcd(t)
	// Root plus an unrelated user, then auth on; the script adds the landscape's users.
	auth := e.EnableAuth(t, "unrelated", "unrelated-pw", "/unrelated/")

	passwords := t.TempDir()
	pw := map[string]string{
		"gatewaydns-eu1":    "eu1-secret",
		"gatewaydns-us1":    "us1-secret",
		"gatewaydns-server": "server-secret",
	}
	for user, p := range pw {
		if err := os.WriteFile(filepath.Join(passwords, user), []byte(p+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"openmcp.cluster", "eu1=prod.platform.eu1", "us1=prod.platform.us1"}
	start := time.Now()
	first := runRolesScript(t, e, auth.RootPassword, passwords, args...)
	t.Logf("roles.sh, first run (%v):\n%s", time.Since(start).Round(time.Millisecond), first)
	for _, want := range []string{
		"role gatewaydns-eu1: readwrite /skydns/cluster/openmcp/eu1/",
		"role gatewaydns-eu1: readwrite /gatewaydns/leader/prod.platform.eu1/",
		"role gatewaydns-eu1: readwrite /gatewaydns/claims/skydns/cluster/openmcp/eu1/",
		"role gatewaydns-eu1: readwrite /gatewaydns/leader-dry-run/prod.platform.eu1/",
		"role gatewaydns-us1: readwrite /skydns/cluster/openmcp/us1/",
		"role gatewaydns-server: read /skydns/cluster/openmcp/",
		"user gatewaydns-eu1: created",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first run does not say %q", want)
		}
	}
	second := runRolesScript(t, e, auth.RootPassword, passwords, args...)
	if strings.Contains(second, "created") || !strings.Contains(second, "user gatewaydns-server: exists") {
		t.Errorf("second run should find everything in place:\n%s", second)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eu1 := e.ClientAs(t, "gatewaydns-eu1", pw["gatewaydns-eu1"])
	us1 := e.ClientAs(t, "gatewaydns-us1", pw["gatewaydns-us1"])
	server := e.ClientAs(t, "gatewaydns-server", pw["gatewaydns-server"])
	const value = `{"host":"203.0.113.10","owner":"prod.platform.eu1"}`

	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v, want allowed", what, err)
		}
	}
	denied := func(what string, err error) {
		t.Helper()
		if !isPermissionDenied(err) {
			t.Errorf("%s: %v, want permission denied", what, err)
		}
	}
	put := func(c *clientv3.Client, key string) error { _, err := c.Put(ctx, key, value); return err }
	get := func(c *clientv3.Client, prefix string) error {
		_, err := c.Get(ctx, prefix, clientv3.WithPrefix())
		return err
	}
	del := func(c *clientv3.Client, key string) error { _, err := c.Delete(ctx, key); return err }

	// eu1: its own names, its own election; nothing of us1's, nothing elsewhere in the zone.
	allowed("eu1 puts under eu1", put(eu1, "/skydns/cluster/openmcp/eu1/app/3e6bee2e"))
	allowed("eu1 puts eu1's own name", put(eu1, "/skydns/cluster/openmcp/eu1/1a2b3c4d"))
	allowed("eu1 reads eu1", get(eu1, "/skydns/cluster/openmcp/eu1/"))
	allowed("eu1 deletes under eu1", del(eu1, "/skydns/cluster/openmcp/eu1/1a2b3c4d"))
	allowed("eu1 puts under its election", put(eu1, "/gatewaydns/leader/prod.platform.eu1/probe"))
	allowed("eu1 cleans up its election", del(eu1, "/gatewaydns/leader/prod.platform.eu1/probe"))
	denied("eu1 puts under us1", put(eu1, "/skydns/cluster/openmcp/us1/app/3e6bee2e"))
	denied("eu1 reads us1", get(eu1, "/skydns/cluster/openmcp/us1/"))
	denied("eu1 puts at the zone's top", put(eu1, "/skydns/cluster/openmcp/app/3e6bee2e"))
	denied("eu1 puts under eu10 (prefix is eu1/, not eu1)", put(eu1, "/skydns/cluster/openmcp/eu10/app/3e6bee2e"))
	denied("eu1 puts the apex", put(eu1, "/skydns/cluster/openmcp/dns/apex/x"))
	denied("eu1 reads the whole zone", get(eu1, "/skydns/cluster/openmcp/"))
	denied("eu1 puts under us1's election", put(eu1, "/gatewaydns/leader/prod.platform.us1/probe"))
	allowed("eu1 puts under its dry-run election", put(eu1, "/gatewaydns/leader-dry-run/prod.platform.eu1/probe"))
	allowed("eu1 cleans up its dry-run election", del(eu1, "/gatewaydns/leader-dry-run/prod.platform.eu1/probe"))
	denied("eu1 puts under us1's dry-run election", put(eu1, "/gatewaydns/leader-dry-run/prod.platform.us1/probe"))
	allowed("eu1 puts its apex's claim guard", put(eu1, "/gatewaydns/claims/skydns/cluster/openmcp/eu1/"))
	allowed("eu1 puts a name's claim guard", put(eu1, "/gatewaydns/claims/skydns/cluster/openmcp/eu1/app/"))
	allowed("eu1 deletes a name's claim guard", del(eu1, "/gatewaydns/claims/skydns/cluster/openmcp/eu1/app/"))
	denied("eu1 puts us1's claim guard", put(eu1, "/gatewaydns/claims/skydns/cluster/openmcp/us1/app/"))
	denied("eu1 puts in another zone", put(eu1, "/skydns/com/example/eu1/x"))
	allowed("us1 puts under us1", put(us1, "/skydns/cluster/openmcp/us1/shop/5f6e7d8c"))
	denied("us1 deletes under eu1", del(us1, "/skydns/cluster/openmcp/eu1/app/3e6bee2e"))

	// The server: reads every cluster's records, writes nothing.
	resp, err := server.Get(ctx, "/skydns/cluster/openmcp/", clientv3.WithPrefix())
	if err != nil {
		t.Errorf("server reads the zone: %v", err)
	} else if resp.Count != 2 {
		t.Errorf("server reads %d keys in the zone, want eu1's and us1's (2)", resp.Count)
	}
	wch := server.Watch(clientv3.WithRequireLeader(ctx), "/skydns/cluster/openmcp/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	if wr := <-wch; wr.Err() != nil {
		t.Errorf("server watches the zone: %v", wr.Err())
	}
	// The serve path reads only its zones' prefixes: the role need not, and does not, cover more.
	if _, err := server.Get(ctx, "/skydns/", clientv3.WithPrefix()); err == nil {
		t.Errorf("the server's role reads beyond its zone")
	}
	denied("server puts in the zone", put(server, "/skydns/cluster/openmcp/eu1/app/ffffffff"))
	denied("server deletes in the zone", del(server, "/skydns/cluster/openmcp/eu1/app/3e6bee2e"))
	denied("server puts an election key", put(server, "/gatewaydns/leader/prod.platform.eu1/x"))

	// The writer's actual election, with the cluster's credentials: it takes leadership and its
	// fenced transaction commits; us1's credentials cannot campaign for eu1.
	term, err := writer.NewElection(eu1, "", "prod.platform.eu1", "test", 5*time.Second).Campaign(ctx)
	if err != nil {
		t.Fatalf("eu1 campaigns for prod.platform.eu1: %v", err)
	}
	txn, err := eu1.Txn(ctx).If(term.Fence()).Then(clientv3.OpPut("/skydns/cluster/openmcp/eu1/fenced/0badc0de", value)).Commit()
	if err != nil || !txn.Succeeded {
		t.Errorf("eu1's fenced put: succeeded=%v err=%v", txn != nil && txn.Succeeded, err)
	}
	if err := term.Resign(ctx); err != nil {
		t.Errorf("eu1 resigns: %v", err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if _, err := writer.NewElection(us1, "", "prod.platform.eu1", "test", 5*time.Second).Campaign(cctx); !isPermissionDenied(err) {
		t.Errorf("us1 campaigns for eu1's owner: %v, want permission denied", err)
	}
}

// TestEtcdRolesRejectsBadArguments: nothing is changed when an argument is wrong.
func TestEtcdRolesRejectsBadArguments(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "deploy", "etcd", "roles.sh")
	for _, args := range [][]string{
		{},
		{"openmcp.cluster"},
		{"openmcp.cluster", "eu1"},
		{"openmcp.cluster", "eu1="},
		{"openmcp.cluster", "EU1=owner"},
		{"openmcp.cluster", "eu1=bad/owner"},
		{"open mcp", "eu1=owner"},
	} {
		// ETCDCTL points at a binary that fails: the arguments are refused before any call.
		cmd := exec.Command(script, args...)
		cmd.Env = append(os.Environ(), "ETCDCTL=/bin/false")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("roles.sh %q: %v, want exit status 2\n%s", args, err, out)
		}
	}
}
