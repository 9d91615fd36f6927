package discover

import (
	"strings"
	"testing"
)

const dockerID = "4f1c2b7e9a0d3c5b6e8f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"

// Cgroup files as the kernel prints them (proc(5), cgroups(7)) for
// processes of the host and of containers under both drivers.
func TestParseContainerCgroup(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"v2 docker systemd", "0::/system.slice/docker-" + dockerID + ".scope\n", "/system.slice/docker-" + dockerID + ".scope"},
		{"v2 docker sub-cgroup made inside", "0::/system.slice/docker-" + dockerID + ".scope/init\n", "/system.slice/docker-" + dockerID + ".scope"},
		{"v2 containerd", "0::/system.slice/containerd.service/cri-containerd-" + dockerID + ".scope\n", "/system.slice/containerd.service/cri-containerd-" + dockerID + ".scope"},
		{"v2 podman", "0::/machine.slice/libpod-" + dockerID + ".scope/container\n", "/machine.slice/libpod-" + dockerID + ".scope"},
		{"v1 cgroupfs docker", "12:pids:/docker/" + dockerID + "\n11:memory:/docker/" + dockerID + "\n1:name=systemd:/docker/" + dockerID + "\n", "/docker/" + dockerID},
		{"v1 hybrid with v2 line", "1:name=systemd:/docker/" + dockerID + "\n0::/docker/" + dockerID + "\n", "/docker/" + dockerID},
		{"lxc", "0::/lxc.payload.train1/init.scope\n", "/lxc.payload.train1"},
		{"host session", "0::/user.slice/user-1000.slice/session-3.scope\n", ""},
		{"host service", "0::/system.slice/train.service\n", ""},
		{"short hex is no container", "0::/system.slice/docker-4f1c2b7e.scope\n", ""},
		{"upper-case hex is no runtime id", "0::/docker/" + strings.ToUpper(dockerID) + "\n", ""},
		{"garbage", "no colons here\n::\n", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseContainerCgroup(strings.NewReader(tc.data))
			if err != nil || got != tc.want {
				t.Errorf("ParseContainerCgroup = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// FuzzParseContainerCgroup: never panics; what it returns is a clean
// absolute path that some line of the input holds.
func FuzzParseContainerCgroup(f *testing.F) {
	f.Add([]byte("0::/system.slice/docker-" + dockerID + ".scope\n"))
	f.Add([]byte("12:pids:/docker/" + dockerID + "\n"))
	f.Add([]byte("0::/lxc.payload.x/../../a\n"))
	f.Add([]byte("0::/user.slice\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseContainerCgroup(strings.NewReader(string(data)))
		if err != nil || got == "" {
			return
		}
		if !strings.HasPrefix(got, "/") || strings.Contains(got, "//") || strings.Contains(got, "/../") {
			t.Fatalf("%q is not a clean absolute path", got)
		}
	})
}
