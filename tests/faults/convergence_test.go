package faults

// A seeded fault-injection convergence test (issue 24), in the spirit of Jepsen: routes and the
// Gateway change all along while a schedule drawn from a seed kills and restarts writers,
// freezes etcd members, restarts the kube-apiserver and reloads the server. Then the faults
// stop, and every name must converge: answered as the objects say, nothing missing, stale or
// extra; and no name may have been deleted from etcd while its route existed.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewaydns/gatewaydns/internal/corednsproc"
	"github.com/gatewaydns/gatewaydns/internal/e2e"
	"github.com/gatewaydns/gatewaydns/internal/gatewayfixture"
	"github.com/gatewaydns/gatewaydns/internal/testenv"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

const (
	convZone   = "eu1.openmcp.cluster"
	convPrefix = "/skydns/cluster/openmcp/eu1/"
	convNS     = "apps"
)

// convergenceSeed is $GATEWAYDNS_SEED (to replay a failure) or a new one.
func convergenceSeed(t *testing.T) uint64 {
	if s := os.Getenv("GATEWAYDNS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("GATEWAYDNS_SEED=%q: %v", s, err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// TestConvergesAfterSeededFaults: a 3-member etcd, a kube-apiserver, two writer replicas of
// one owner and a central server. For 20 s (5 minutes with GATEWAYDNS_SOAK=1) routes are
// created and deleted and the Gateway's address changes, 5 times a second, while the faults
// drawn from the seed happen one after the other: a writer SIGKILLed and started again at once,
// an etcd member SIGSTOPped for 0-3 s, the kube-apiserver restarted with a writer starting
// during its start, the central server reloaded, etcd restored from a snapshot taken 0.5-2.5 s
// before (plain, or with --bump-revision --mark-compacted); the schedule ends with
// kube-apiserver restarts until the last is the third in under a minute. Within convergeBound
// of the last fault every name is as the objects say. A failure names its seed;
// GATEWAYDNS_SEED=<seed> replays its schedule.
func TestConvergesAfterSeededFaults(t *testing.T) {
	seed := convergenceSeed(t)
	t.Logf("seed %d (GATEWAYDNS_SEED=%d replays this schedule)", seed, seed)
	defer func() {
		if t.Failed() {
			t.Logf("failed with seed %d: GATEWAYDNS_SEED=%d go test -run TestConvergesAfterSeededFaults ./tests/", seed, seed)
		}
	}()
	length := 20 * time.Second
	if os.Getenv("GATEWAYDNS_SOAK") == "1" {
		length = 5 * time.Minute
	}
	l := startLandscape(t)
	hist := watchNames(t, l.cluster)
	l.hist = hist

	ctx, cancel := context.WithCancel(context.Background())
	ch := &churn{k8s: l.k8s, rng: rand.New(rand.NewPCG(seed, 2)), routes: map[string]*routeLife{}}
	var churning sync.WaitGroup
	churning.Go(func() { ch.run(ctx) })
	rng := rand.New(rand.NewPCG(seed, 1))
	faults := l.injectFaults(t, rng, length)
	faults = append(faults, l.restartAPIServerAgain(t, rng)...)
	lastFault := time.Now()
	cancel()
	churning.Wait()
	hist.stop()
	t.Logf("faults: %s", strings.Join(faults, ", "))
	t.Logf("churn: %s", ch.summary())

	l.settle(t)
	report := l.converged(t, time.Until(lastFault.Add(convergeBound)))
	t.Logf("after the faults: %s (%v after the last)", report, time.Since(lastFault).Round(time.Millisecond))
	violations, checked := hist.deletedWhileAlive(ch, l.routeNames(t))
	for _, v := range violations {
		t.Errorf("deleted while its route existed: %s", v)
	}
	t.Logf("%d times a name lost its last key during the run; %d of them while its route existed", checked, len(violations))
}

// landscape is the processes of the test.
type landscape struct {
	cluster   *testenv.EtcdCluster
	kube      *testenv.Kube
	k8s       *gatewayfixture.Cluster
	writers   [2]*corednsproc.Process
	central   *corednsproc.Process
	centralCf string
	reloads   int
	hist      *nameHistory // follows etcd anew after a restore (restoreEtcd)
	// apiRestarts are when the kube-apiserver restarts began.
	apiRestarts []time.Time
}

func startLandscape(t *testing.T) *landscape {
	// A grace for watches at its stop, as TestWriterKeepsItsNamesWhileKubeAPIServerRestarts explains.
	l := &landscape{cluster: testenv.StartEtcdCluster(t, 3),
		kube: testenv.StartKubeAPIServer(t, testenv.WithAPIServerFlag("shutdown-watch-termination-grace-period", "2s"))}
	l.k8s = gatewayfixture.New(t, l.kube.Config)
	l.k8s.Namespace("infra")
	l.k8s.Namespace(convNS)
	l.k8s.Gateway("infra", "public", gatewayv1.HTTPProtocolType, 80, "*."+convZone, "203.0.113.1")
	for i := range 10 {
		name := fmt.Sprintf("r%04d", i)
		l.k8s.HTTPRoute(convNS, name, "infra", "public", name+"."+convZone)
	}
	l.centralCf = centralOn(l.cluster.Endpoints())
	l.central = corednsproc.Start(t, "central.Corefile", l.centralCf)
	for i := range l.writers {
		l.startWriter(t, i)
	}
	l.central.WaitReady(t, 30*time.Second)
	for _, w := range l.writers {
		w.WaitReady(t, 60*time.Second)
	}
	e2e.WaitFor(t, 15*time.Second, l.central.DNS, "r0009."+convZone+".", dns.TypeA, e2e.AnswersWith("203.0.113.1"))
	return l
}

// startWriter starts writer i under the pod name it keeps across restarts, as a container
// restarted in its pod does.
func (l *landscape) startWriter(t *testing.T, i int) {
	name := fmt.Sprintf("writer-%d", i)
	cf := e2e.WriterCorefile(strings.Join(l.cluster.Endpoints(), " "), "eu1", l.kube.KubeconfigFile, convZone)
	l.writers[i] = corednsproc.Start(t, name+".Corefile", cf, "POD_NAME="+name)
}

// injectFaults runs faults drawn from rng, one after the other, for length; the first five
// are one of each kind, in an order drawn from rng.
func (l *landscape) injectFaults(t *testing.T, rng *rand.Rand, length time.Duration) []string {
	kinds := []func(*testing.T, *rand.Rand) string{l.killWriter, l.freezeMember, l.restartAPIServer, l.reloadCentral,
		l.restoreEtcd}
	order := rng.Perm(len(kinds))
	var done []string
	end := time.Now().Add(length)
	for i := 0; time.Now().Before(end); i++ {
		k := rng.IntN(len(kinds))
		if i < len(order) {
			k = order[i]
		}
		done = append(done, kinds[k](t, rng))
		pause := time.Duration(500+rng.IntN(2500)) * time.Millisecond
		time.Sleep(min(pause, max(time.Until(end), 0))) // the schedule's spacing, not a wait for a condition
	}
	return done
}

func (l *landscape) killWriter(t *testing.T, rng *rand.Rand) string {
	i := rng.IntN(len(l.writers))
	l.writers[i].Kill()
	l.startWriter(t, i)
	return fmt.Sprintf("kill writer-%d", i)
}

func (l *landscape) freezeMember(t *testing.T, rng *rand.Rand) string {
	m := l.cluster.Members[rng.IntN(len(l.cluster.Members))]
	d := time.Duration(rng.IntN(3000)) * time.Millisecond
	m.Freeze()
	time.Sleep(d) // the freeze's length, drawn from the seed
	m.Thaw()
	return fmt.Sprintf("freeze %s %v", m.Name, d)
}

// convergeBound is how soon after the last fault every name must be as the objects say.
const convergeBound = 5 * time.Second

// restartAPIServerAgain ends the schedule with kube-apiserver restarts, at least two and until
// the last is the third in under a minute: client-go's re-list back-off, reset every 2 minutes,
// grew with each (with two, the old informers were 5 missing, 14 stale, 2 extra at 5 s).
// The writers run through these, ready when the series starts: a writer started meanwhile
// would start its informers afresh, and one still discovering the Gateway API kinds retries
// discovery on a back-off of its own (discovery.go).
func (l *landscape) restartAPIServerAgain(t *testing.T, rng *rand.Rand) []string {
	l.settle(t)
	var done []string
	for {
		recent := 0
		for _, at := range l.apiRestarts {
			if time.Since(at) < time.Minute-10*time.Second { // a minute, with room for the next restart
				recent++
			}
		}
		if recent >= 3 && len(done) >= 2 {
			return done
		}
		if len(done) > 0 || len(l.apiRestarts) > 0 {
			time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond) // the schedule's spacing
		}
		l.apiRestarts = append(l.apiRestarts, time.Now())
		l.kube.StopAPIServer(t)
		l.kube.StartAPIServer(t)
		done = append(done, "restart kube-apiserver")
	}
}

func (l *landscape) restartAPIServer(t *testing.T, rng *rand.Rand) string {
	i := rng.IntN(len(l.writers))
	l.apiRestarts = append(l.apiRestarts, time.Now())
	l.kube.StopAPIServer(t)
	// A writer that starts while the API server is down or starting must delete nothing.
	l.writers[i].Kill()
	l.startWriter(t, i)
	l.kube.StartAPIServer(t)
	return fmt.Sprintf("restart kube-apiserver (writer-%d started during it)", i)
}

func (l *landscape) reloadCentral(t *testing.T, _ *rand.Rand) string {
	l.reloads++
	src := l.centralCf + fmt.Sprintf("# reload %d\n", l.reloads)
	if _, ok := l.central.ReloadNow(t, src, 10*time.Second); !ok {
		t.Errorf("reload %d of the central server failed", l.reloads)
	}
	return "reload central"
}

// settle waits until every process is back: the writers and the server ready.
func (l *landscape) settle(t *testing.T) {
	for _, w := range l.writers {
		w.WaitReady(t, 60*time.Second)
	}
	l.central.WaitReady(t, 30*time.Second)
}

// routeNames are the names of the routes the API server holds Accepted, and the Gateway's
// address: what the answers must say.
func (l *landscape) routeNames(t *testing.T) (names map[string]bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	routes, err := l.k8s.GW.GatewayV1().HTTPRoutes(convNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the routes: %v", err)
	}
	names = map[string]bool{}
	for _, r := range routes.Items {
		if r.DeletionTimestamp == nil && len(r.Status.Parents) > 0 {
			for _, h := range r.Spec.Hostnames {
				names[string(h)] = true
			}
		}
	}
	return names
}

func (l *landscape) gatewayAddress(t *testing.T) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := l.k8s.GW.GatewayV1().Gateways("infra").Get(ctx, "public", metav1.GetOptions{})
	if err != nil || len(gw.Status.Addresses) != 1 {
		t.Fatalf("reading the Gateway: %v (%v)", err, gw.Status.Addresses)
	}
	return gw.Status.Addresses[0].Value
}

// converged waits up to within for every name to be answered as the objects say and etcd to
// hold exactly those names, and reports what is missing, stale and extra if they do not.
func (l *landscape) converged(t *testing.T, within time.Duration) string {
	want := l.routeNames(t)
	addr := l.gatewayAddress(t)
	cli := l.cluster.Client(t)
	deadline := time.Now().Add(within)
	for {
		var missing, stale, extra []string
		for name := range want {
			r, err := e2e.Exchange("udp", l.central.DNS, name+".", dns.TypeA)
			switch {
			case err != nil || r.Rcode == dns.RcodeNameError || !e2e.HasAnswer(r):
				missing = append(missing, name)
			case !e2e.AnswersWith(addr)(r):
				stale = append(stale, fmt.Sprintf("%s %v", name, e2e.Addresses(r)))
			}
		}
		for key := range e2e.KeysUnder(t, cli, convPrefix) {
			if name, ok := record.RecordName("skydns", key); ok && !want[name] {
				extra = append(extra, name)
			}
		}
		report := fmt.Sprintf("%d names: %d missing, %d stale, %d extra", len(want), len(missing), len(stale), len(extra))
		if len(missing)+len(stale)+len(extra) == 0 {
			return report
		}
		if time.Now().After(deadline) {
			slices.Sort(missing)
			slices.Sort(stale)
			slices.Sort(extra)
			t.Errorf("not converged %v after the faults: %s\nmissing: %v\nstale: %v\nextra: %v", within, report, missing, stale, extra)
			return report
		}
		time.Sleep(200 * time.Millisecond)
	}
}
