package testtools

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// PodDevice is one container's devices in a FakeKubelet answer.
type PodDevice struct {
	Namespace, Pod, Container string
	Resource                  string   // e.g. huawei.com/Ascend910
	DeviceIDs                 []string // e.g. Ascend910-3
}

// FakeKubelet serves the kubelet's PodResources API (the real generated
// service and types) on a unix socket, answering List with what Set gave it.
type FakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer

	Socket string

	mu    sync.Mutex
	pods  []PodDevice
	calls int
	fail  error
}

// StartFakeKubelet listens on a fresh unix socket in a temporary directory
// (paths of unix sockets are limited to ~108 bytes, so not below t.TempDir
// when that is long) and stops with the test.
func StartFakeKubelet(t testing.TB, pods ...PodDevice) *FakeKubelet {
	t.Helper()
	dir, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return StartFakeKubeletAt(t, filepath.Join(dir, "kubelet.sock"), pods...)
}

// StartFakeKubeletAt listens on the given socket path.
func StartFakeKubeletAt(t testing.TB, socket string, pods ...PodDevice) *FakeKubelet {
	t.Helper()
	k := &FakeKubelet{Socket: socket, pods: pods}
	l, err := net.Listen("unix", k.Socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, k)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return k
}

// Set replaces the answer of the next List calls.
func (k *FakeKubelet) Set(pods ...PodDevice) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods = pods
}

// Fail makes List return err (nil: answer again).
func (k *FakeKubelet) Fail(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fail = err
}

// Calls returns how many List calls were served.
func (k *FakeKubelet) Calls() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls
}

// List answers with the configured pods, one PodResources per pod.
func (k *FakeKubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls++
	if k.fail != nil {
		return nil, k.fail
	}
	resp := &podresourcesv1.ListPodResourcesResponse{}
	byPod := map[[2]string]*podresourcesv1.PodResources{}
	for _, p := range k.pods {
		pr := byPod[[2]string{p.Namespace, p.Pod}]
		if pr == nil {
			pr = &podresourcesv1.PodResources{Namespace: p.Namespace, Name: p.Pod}
			byPod[[2]string{p.Namespace, p.Pod}] = pr
			resp.PodResources = append(resp.PodResources, pr)
		}
		pr.Containers = append(pr.Containers, &podresourcesv1.ContainerResources{
			Name:    p.Container,
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: p.Resource, DeviceIds: p.DeviceIDs}},
		})
	}
	return resp, nil
}
