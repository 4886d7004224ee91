// Copied from ../shared/tools/rc-crictl/main.go (team tools, 2026-11), built by test/e2e/setup/build-rc-crictl.sh.
// rc-crictl: a deliberately tiny CRI (runtime.v1) client, standing in for
// crictl (not packaged in Debian 12). It drives containerd's CRI plugin the
// way kubelet does, so the CRI plugin invokes CNI exactly as in Kubernetes:
// RunPodSandbox -> CNI ADD (loopback + the first conflist in conf_dir),
// StopPodSandbox -> CNI DEL, RemovePodSandbox.
//
// Built offline by build-rc-crictl.sh against k8s.io/cri-api vendored in
// Debian's containerd 1.6.20 source package + Debian's grpc/gogo packages.
//
// Usage: rc-crictl [-r SOCKET] version
//        rc-crictl [-r SOCKET] runp -name N [-ns NS] [-uid U] [-p HOST:CTR]... [-image IMG -- CMD...]
//        rc-crictl [-r SOCKET] inspectp POD_ID     (JSON: state, ip, additional ips)
//        rc-crictl [-r SOCKET] stopp POD_ID | rmp POD_ID | pods
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type ports []string

func (p *ports) String() string     { return strings.Join(*p, ",") }
func (p *ports) Set(v string) error { *p = append(*p, v); return nil }

func die(f string, a ...interface{}) { fmt.Fprintf(os.Stderr, "rc-crictl: "+f+"\n", a...); os.Exit(1) }

func main() {
	sock := "/run/containerd/containerd.sock"
	if v := os.Getenv("CONTAINER_RUNTIME_ENDPOINT"); v != "" {
		sock = strings.TrimPrefix(v, "unix://")
	}
	args := os.Args[1:]
	if len(args) >= 2 && args[0] == "-r" {
		sock, args = strings.TrimPrefix(args[1], "unix://"), args[2:]
	}
	if len(args) == 0 {
		die("usage: rc-crictl [-r SOCK] version|runp|inspectp|stopp|rmp|pods ...")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := grpc.DialContext(ctx, sock, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
	if err != nil {
		die("dial %s: %v", sock, err)
	}
	defer conn.Close()
	rt := runtime.NewRuntimeServiceClient(conn)
	out := func(v interface{}) { b, _ := json.MarshalIndent(v, "", "  "); fmt.Println(string(b)) }

	switch args[0] {
	case "version":
		r, err := rt.Version(ctx, &runtime.VersionRequest{})
		if err != nil {
			die("%v", err)
		}
		out(r)
	case "pods":
		r, err := rt.ListPodSandbox(ctx, &runtime.ListPodSandboxRequest{})
		if err != nil {
			die("%v", err)
		}
		for _, p := range r.Items {
			fmt.Printf("%s %s/%s %s\n", p.Id, p.Metadata.Namespace, p.Metadata.Name, p.State)
		}
	case "inspectp":
		if len(args) < 2 {
			die("inspectp POD_ID")
		}
		r, err := rt.PodSandboxStatus(ctx, &runtime.PodSandboxStatusRequest{PodSandboxId: args[1], Verbose: true})
		if err != nil {
			die("%v", err)
		}
		st := map[string]interface{}{"id": r.Status.Id, "state": r.Status.State.String()}
		if r.Status.Network != nil {
			st["ip"] = r.Status.Network.Ip
			var extra []string
			for _, ip := range r.Status.Network.AdditionalIps {
				extra = append(extra, ip.Ip)
			}
			st["additionalIps"] = extra
		}
		if info, ok := r.Info["info"]; ok {
			var v map[string]interface{}
			if json.Unmarshal([]byte(info), &v) == nil {
				st["netNamespacePath"] = v["netNamespacePath"]
				st["cniResult"] = v["cniResult"]
			}
		}
		out(st)
	case "stopp", "rmp":
		if len(args) < 2 {
			die("%s POD_ID", args[0])
		}
		if args[0] == "stopp" {
			_, err = rt.StopPodSandbox(ctx, &runtime.StopPodSandboxRequest{PodSandboxId: args[1]})
		} else {
			_, err = rt.RemovePodSandbox(ctx, &runtime.RemovePodSandboxRequest{PodSandboxId: args[1]})
		}
		if err != nil {
			die("%v", err)
		}
		fmt.Println(args[1])
	case "runp":
		fs := flag.NewFlagSet("runp", flag.ExitOnError)
		name := fs.String("name", "rc-pod", "pod name")
		ns := fs.String("ns", "default", "pod namespace")
		uid := fs.String("uid", "", "pod uid (default: name-<unixnano>)")
		image := fs.String("image", "", "image for an app container (optional)")
		logdir := fs.String("logdir", "/tmp/rc-containerd/logs", "pod log directory parent")
		var pm ports
		fs.Var(&pm, "p", "port mapping HOSTPORT:CONTAINERPORT[/udp] (repeatable)")
		_ = fs.Parse(args[1:])
		if *uid == "" {
			*uid = fmt.Sprintf("%s-%d", *name, time.Now().UnixNano())
		}
		cfg := &runtime.PodSandboxConfig{
			Metadata:     &runtime.PodSandboxMetadata{Name: *name, Namespace: *ns, Uid: *uid},
			Hostname:     *name,
			LogDirectory: *logdir + "/" + *uid,
			Linux: &runtime.LinuxPodSandboxConfig{SecurityContext: &runtime.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtime.NamespaceOption{Network: runtime.NamespaceMode_POD}}},
		}
		for _, m := range pm {
			proto := runtime.Protocol_TCP
			if strings.HasSuffix(m, "/udp") {
				proto, m = runtime.Protocol_UDP, strings.TrimSuffix(m, "/udp")
			}
			hc := strings.SplitN(m, ":", 2)
			if len(hc) != 2 {
				die("bad -p %q", m)
			}
			h, _ := strconv.Atoi(hc[0])
			c, _ := strconv.Atoi(hc[1])
			cfg.PortMappings = append(cfg.PortMappings, &runtime.PortMapping{Protocol: proto, HostPort: int32(h), ContainerPort: int32(c)})
		}
		if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
			die("%v", err)
		}
		r, err := rt.RunPodSandbox(ctx, &runtime.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			die("RunPodSandbox: %v", err)
		}
		fmt.Println(r.PodSandboxId)
		if *image != "" && fs.NArg() > 0 {
			cc, err := rt.CreateContainer(ctx, &runtime.CreateContainerRequest{
				PodSandboxId:  r.PodSandboxId,
				SandboxConfig: cfg,
				Config: &runtime.ContainerConfig{
					Metadata: &runtime.ContainerMetadata{Name: *name + "-app"},
					Image:    &runtime.ImageSpec{Image: *image},
					Command:  fs.Args(),
					LogPath:  "app.log",
				},
			})
			if err != nil {
				die("CreateContainer: %v", err)
			}
			if _, err := rt.StartContainer(ctx, &runtime.StartContainerRequest{ContainerId: cc.ContainerId}); err != nil {
				die("StartContainer: %v", err)
			}
			fmt.Fprintf(os.Stderr, "container %s started in pod\n", cc.ContainerId)
		}
	default:
		die("unknown command %q", args[0])
	}
}
