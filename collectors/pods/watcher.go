package pods

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kingpin/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/hccl-exporter/hccl_exporter/internal/flagcheck"
)

// DefaultSocket is where the kubelet serves the PodResources API.
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// maxRecvBytes bounds a List answer. A real node (110 pods by default,
// at most a few hundred, 16 NPUs) answers in well under 100 KiB; 8 MiB
// (100,000 one-device pods fit) keeps a runaway answer from costing the
// exporter hundreds of MiB while it is decoded (a bigger one fails the
// List, counted as a list error).
const maxRecvBytes = 8 << 20

// Bounds on what one answer may add to ascend_npu_pod_info; past them the
// rest is dropped and counted in hccl_exporter_label_values_dropped_total.
const (
	// DefaultMaxPods is --pods.max-assignments: far above a real node's
	// max-pods (110 by default), far below what would hurt.
	DefaultMaxPods = 1024
	// maxPodsPerChip bounds the containers one chip is assigned to (vNPU
	// slices of a chip: a handful on real nodes).
	maxPodsPerChip = 64
	// MaxLabelBytes is the longest namespace, pod or container label
	// value kept; Kubernetes names are at most 253 bytes, so only a
	// broken or hostile kubelet answer is cut.
	MaxLabelBytes = 256
)

// Label values of hccl_exporter_label_values_dropped_total for the pod
// attribution.
const (
	droppedPod    = "kubelet_pod"
	droppedLength = "kubelet_label_length"
)

var droppedReasons = []string{droppedLength, droppedPod}

// Config is the pods collector configuration, filled by AddFlags.
type Config struct {
	Socket   string        // empty disables the kubelet query
	Interval time.Duration // how often the kubelet is asked
	Timeout  time.Duration // per List call
	// MaxPods caps the (chip, container) assignments kept from one answer:
	// the ascend_npu_pod_info series. 0 takes DefaultMaxPods.
	MaxPods int
	// KubeletLogs is the kubelet's log root (pods/, containers/) that
	// names the pod of each NPU process's cgroup; empty disables.
	KubeletLogs string
}

// AddFlags registers the --kubelet.* flags.
func AddFlags(app *kingpin.Application, rules *flagcheck.Rules) *Config {
	cfg := &Config{}
	rules.Flag(app, "pods.kubelet-socket", "The kubelet's PodResources socket, read to learn which pod holds each NPU "+
		"(as dcgm-exporter does for GPUs). Mount it read-only into the exporter's pod. Where it does not exist "+
		"(bare metal, systemd) nothing is attributed to pods, which is normal. Empty disables.", flagcheck.AbsPathOrEmpty).
		Default(DefaultSocket).StringVar(&cfg.Socket)
	rules.Flag(app, "pods.kubelet-interval", "How often the kubelet is asked which pod holds which device, in the "+
		"background (never during a scrape).", flagcheck.Positive(flagcheck.MaxInterval)).Default("15s").DurationVar(&cfg.Interval)
	rules.Flag(app, "pods.kubelet-timeout", "Time limit of one PodResources List call.", flagcheck.Positive(10*time.Minute)).
		Default("5s").DurationVar(&cfg.Timeout)
	rules.Flag(app, "pods.max-assignments", fmt.Sprintf("Most (chip, container) assignments kept from one kubelet answer, "+
		"i.e. ascend_npu_pod_info series (at most %d per chip; namespace, pod and container values are cut at %d bytes). "+
		"What is dropped or cut is counted in hccl_exporter_label_values_dropped_total{label=~\"kubelet_.*\"}.",
		maxPodsPerChip, MaxLabelBytes), flagcheck.Cap).
		Default(fmt.Sprint(DefaultMaxPods)).IntVar(&cfg.MaxPods)
	rules.Flag(app, "pods.kubelet-logs", "The kubelet's log root (holding pods/ and containers/). Each process npu-smi lists "+
		"is attributed to the pod and container of its own cgroup (read through --path.procfs), named through "+
		"<root>/pods/<namespace>_<pod>_<uid>/ and <root>/containers/*-<container id>.log: no socket, no API server. "+
		"Where it disagrees with PodResources the process wins (hccl_exporter_pod_attribution_conflicts). Empty disables.", flagcheck.AbsPathOrEmpty).
		Default("/var/log").StringVar(&cfg.KubeletLogs)
	return cfg
}

// Assignment is one device the kubelet assigned to one container.
type Assignment struct {
	Namespace, Pod, Container string
	Resource                  string // e.g. huawei.com/Ascend910
	Device                    Device
}

// Status is the state of the last refresh.
type Status int

// Refresh states.
const (
	// StatusDisabled: no socket configured.
	StatusDisabled Status = iota
	// StatusNoSocket: the socket does not exist (not a Kubernetes node, or
	// not mounted): nothing to attribute, not an error.
	StatusNoSocket
	// StatusOK: the last List succeeded.
	StatusOK
	// StatusFailed: the socket exists but the last List failed.
	StatusFailed
)

// Watcher asks the kubelet which container holds which Ascend device, in a
// background loop, and keeps the last answer for scrapes.
type Watcher struct {
	cfg    Config
	logger *slog.Logger
	list   func(ctx context.Context) (*podresourcesv1.ListPodResourcesResponse, error)

	mu          sync.Mutex
	assignments []Assignment
	status      Status
	lastOK      time.Time
	errors      map[string]uint64 // by reason
	foreign     int               // device ids of the last answer that are not Ascend forms
	dropped     map[string]uint64 // hccl_exporter_label_values_dropped_total by label
	lastLogged  string            // the state last logged, so that each change is said once

	conn *grpc.ClientConn

	startOnce, closeOnce sync.Once
	cancel               context.CancelFunc
	done                 chan struct{}
}

// Error reasons of hccl_exporter_pod_resources_errors_total.
const (
	reasonConnect = "connect"
	reasonList    = "list"
)

var errorReasons = []string{reasonConnect, reasonList}

// NewWatcher returns a watcher of the configured socket. It does not
// connect until Start or Refresh.
func NewWatcher(cfg Config, logger *slog.Logger) *Watcher {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 15 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxPods <= 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	w := &Watcher{cfg: cfg, logger: logger, errors: map[string]uint64{}, dropped: map[string]uint64{}, done: make(chan struct{})}
	w.list = w.grpcList
	return w
}

// Start refreshes at once and then every interval until ctx ends or Close.
func (w *Watcher) Start(ctx context.Context) {
	w.startOnce.Do(func() {
		ctx, w.cancel = context.WithCancel(ctx)
		go func() {
			defer close(w.done)
			t := time.NewTicker(w.cfg.Interval)
			defer t.Stop()
			for {
				w.Refresh(ctx)
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	})
}

// Close stops the loop and the connection.
func (w *Watcher) Close() error {
	var err error
	w.closeOnce.Do(func() {
		if w.cancel != nil {
			w.cancel()
			<-w.done
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.conn != nil {
			err = w.conn.Close()
			w.conn = nil
		}
	})
	return err
}

// Refresh asks the kubelet once and keeps the answer. A missing socket is
// normal (bare metal, systemd): it is logged once, and again when it
// appears. On a failed call the previous answer is dropped rather than
// served as current: pods come and go.
func (w *Watcher) Refresh(ctx context.Context) {
	if w.cfg.Socket == "" {
		w.set(StatusDisabled, nil, 0, "", "")
		return
	}
	if _, err := os.Stat(w.cfg.Socket); errors.Is(err, fs.ErrNotExist) {
		w.set(StatusNoSocket, nil, 0, "", "")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	resp, err := w.list(ctx)
	if err != nil {
		reason := reasonList
		var ce connectError
		if errors.As(err, &ce) || status.Code(err) == codes.Unavailable {
			// Nothing listens on the socket (kubelet restarting) or it
			// cannot be reached: not an answer of the API.
			reason = reasonConnect
		}
		w.set(StatusFailed, nil, 0, reason, err.Error())
		return
	}
	as, foreign, dropped := assignments(resp, w.cfg.MaxPods)
	resp = nil // the answer is the bulk of the memory: let it go before sorting and storing
	w.mu.Lock()
	for k, n := range dropped {
		w.dropped[k] += n
	}
	w.mu.Unlock()
	if dropped[droppedPod] > 0 {
		w.logger.Warn("the kubelet assigned NPUs to more containers than --pods.max-assignments (or 64 per chip) allows; the rest are not exported",
			"kept", len(as), "dropped", dropped[droppedPod], "max_pods", w.cfg.MaxPods)
	}
	w.set(StatusOK, as, foreign, "", "")
}

type connectError struct{ err error }

func (e connectError) Error() string { return e.err.Error() }
func (e connectError) Unwrap() error { return e.err }

func (w *Watcher) grpcList(ctx context.Context) (*podresourcesv1.ListPodResourcesResponse, error) {
	w.mu.Lock()
	conn := w.conn
	if conn == nil {
		var err error
		conn, err = grpc.NewClient("unix://"+w.cfg.Socket,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvBytes)))
		if err != nil {
			w.mu.Unlock()
			return nil, connectError{fmt.Errorf("connect to the kubelet PodResources socket %s: %w", w.cfg.Socket, err)}
		}
		w.conn = conn
	}
	w.mu.Unlock()
	resp, err := podresourcesv1.NewPodResourcesListerClient(conn).List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("kubelet PodResources List on %s: %w", w.cfg.Socket, err)
	}
	return resp, nil
}

// assignments flattens a List answer to the Ascend devices of each
// container, sorted, and counts the device ids of other forms. It keeps one
// assignment per (chip, container) (several vNPUs of one chip in one
// container are one), at most maxPodsPerChip per chip and maxPods in all,
// with label values cut at MaxLabelBytes; what it drops or cuts is
// counted by label. Its memory is bounded by the caps, whatever the answer.
func assignments(resp *podresourcesv1.ListPodResourcesResponse, maxPods int) ([]Assignment, int, map[string]uint64) {
	type key struct {
		phy          int
		ns, pod, ctr string
	}
	var out []Assignment
	seen := map[key]bool{}
	perChip := map[int]int{}
	dropped := map[string]uint64{}
	foreign := 0
	for _, pod := range resp.GetPodResources() {
		ns, name := pod.GetNamespace(), pod.GetName()
		for _, c := range pod.GetContainers() {
			ctr := c.GetName()
			for _, dev := range c.GetDevices() {
				for _, id := range dev.GetDeviceIds() {
					d, ok := ParseDeviceID(id)
					if !ok {
						foreign++
						continue
					}
					k := key{d.PhyID, ns, name, ctr}
					if seen[k] {
						continue
					}
					if len(out) >= maxPods || perChip[d.PhyID] >= maxPodsPerChip {
						dropped[droppedPod]++
						continue
					}
					seen[k] = true
					perChip[d.PhyID]++
					a := Assignment{Namespace: cutLabel(ns, dropped), Pod: cutLabel(name, dropped),
						Container: cutLabel(ctr, dropped), Resource: cutLabel(dev.GetResourceName(), dropped), Device: d}
					// Copies: the strings must not pin the decoded answer.
					a.Namespace, a.Pod, a.Container, a.Resource = strings.Clone(a.Namespace), strings.Clone(a.Pod),
						strings.Clone(a.Container), strings.Clone(a.Resource)
					a.Device.ID = strings.Clone(a.Device.ID)
					a.Device.Type = strings.Clone(a.Device.Type)
					out = append(out, a)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Device.PhyID != b.Device.PhyID {
			return a.Device.PhyID < b.Device.PhyID
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return a.Container < b.Container
	})
	return out, foreign, dropped
}

// cutLabel cuts a label value at MaxLabelBytes (on a rune boundary, and
// valid UTF-8 as label values must be), counting the cut.
func cutLabel(s string, dropped map[string]uint64) string {
	if len(s) <= MaxLabelBytes && utf8.ValidString(s) {
		return s
	}
	if len(s) > MaxLabelBytes {
		dropped[droppedLength]++
		n := MaxLabelBytes
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func (w *Watcher) set(st Status, as []Assignment, foreign int, reason, msg string) {
	w.mu.Lock()
	w.status, w.assignments, w.foreign = st, as, foreign
	if st == StatusOK {
		w.lastOK = time.Now()
	}
	if reason != "" {
		w.errors[reason]++
	}
	// Log each change of state once, not every interval.
	state := fmt.Sprint(st) + "|" + msg
	changed := state != w.lastLogged
	w.lastLogged = state
	w.mu.Unlock()
	if !changed {
		return
	}
	switch st {
	case StatusNoSocket:
		w.logger.Info("no kubelet PodResources socket: NPUs are not attributed to pods (normal on bare metal and under systemd; "+
			"in Kubernetes mount the socket read-only into the exporter's pod)", "socket", w.cfg.Socket)
	case StatusFailed:
		w.logger.Warn("cannot ask the kubelet which pod holds which NPU; pod attribution is off until it answers "+
			"(is the socket mounted, and is the exporter allowed to read it?)", "socket", w.cfg.Socket, "err", msg)
	case StatusOK:
		w.logger.Info("reading pod device assignments from the kubelet", "socket", w.cfg.Socket, "ascend_devices", len(as))
	}
}

// Snapshot returns the assignments of the last refresh (nil unless it
// succeeded) and its state.
func (w *Watcher) Snapshot() ([]Assignment, Status) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.assignments, w.status
}

// PodOfDevice names the one container the last answer assigned a physical
// NPU to; ok is false when none or several (vNPUs of several pods) hold it.
func (w *Watcher) PodOfDevice(phy int) (namespace, pod, container string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.assignments {
		if a.Device.PhyID != phy {
			continue
		}
		if ok && (a.Namespace != namespace || a.Pod != pod || a.Container != container) {
			return "", "", "", false
		}
		namespace, pod, container, ok = a.Namespace, a.Pod, a.Container, true
	}
	return namespace, pod, container, ok
}
