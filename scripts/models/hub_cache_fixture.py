"""Downloads files of one repository with huggingface_hub into a cache folder.

Run by test/helpers/hub-cache-fixture.ts, with HF_ENDPOINT pointing at the test kit's Hub server:
    python hub_cache_fixture.py <repo> <cache_dir> <file>...
"""

import sys

from huggingface_hub import snapshot_download


def main() -> None:
    repo, cache_dir, *files = sys.argv[1:]
    path = snapshot_download(repo_id=repo, cache_dir=cache_dir, allow_patterns=files)
    print(path)


if __name__ == "__main__":
    main()
