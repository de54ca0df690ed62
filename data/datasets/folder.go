package datasets

import (
	"fmt"
	"path/filepath"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/folder"
	"github.com/simclr-go/simclr/data/internal/fsutil"
)

// folderSet is a user's images: folder:PATH, PATH/train/CLASS/*.jpg and
// PATH/test/CLASS/*.jpg (PNG too), resized to the size asked for; or, for
// OpenUnlabelled, a flat folder PATH/*.jpg of pictures without classes.
func folderSet() Dataset {
	return Dataset{
		Name: "folder",
		Arg:  "PATH",
		Help: "folder:PATH (PATH/train/CLASS/*.png|jpg and PATH/test/...)",
		Load: func(option, dataDir string, size int) (*data.Splits, error) {
			root, err := folderRoot(option, dataDir)
			if err != nil {
				return nil, err
			}
			if !fsutil.IsDir(filepath.Join(root, "train")) {
				if _, err := folder.ScanFlat(root); err == nil {
					return nil, fmt.Errorf("dataset folder:%s: %s holds pictures but no train/CLASS and test/CLASS folders: training and evaluation need the classes (simclr embed reads such a folder)", option, root)
				}
			}
			return folder.Load(root, size)
		},
		LoadUnlabelled: func(option, dataDir string, size int) (*data.Splits, error) {
			root, err := folderRoot(option, dataDir)
			if err != nil {
				return nil, err
			}
			if fsutil.IsDir(filepath.Join(root, "train")) {
				return folder.Load(root, size)
			}
			return folder.LoadFlat(root, size)
		},
	}
}

// folderRoot is the folder of folder:PATH: PATH, or DIR/PATH when PATH is
// relative and not found as given.
func folderRoot(path, dataDir string) (string, error) {
	root := path
	if !filepath.IsAbs(root) && !fsutil.IsDir(root) && fsutil.IsDir(filepath.Join(dataDir, root)) {
		root = filepath.Join(dataDir, root)
	}
	if !fsutil.IsDir(root) {
		return "", fmt.Errorf("dataset %q: %w: no folder %s (nor %s); it must hold train/CLASS/*.jpg and test/CLASS/*.jpg",
			"folder:"+path, ErrNotFound, path, filepath.Join(dataDir, path))
	}
	return root, nil
}
