package cudainstall

import (
	"bufio"
	"os"
	"strings"
)

// ListNames reports whether the dpkg file list at list
// (/var/lib/dpkg/info/PACKAGE.list) names path, or a file of the same
// folder whose name starts with path's and a dot: a soname such as
// libnccl.so.2 is often a link to libnccl.so.2.21.5, which the list may
// name alone. A list that cannot be read names nothing.
func ListNames(list, path string) bool {
	f, err := os.Open(list)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l == path || strings.HasPrefix(l, path+".") {
			return true
		}
	}
	return false
}
