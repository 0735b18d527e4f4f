"""An in-tree PEP 517 / PEP 660 build backend for the clothd client.

Why: ``pip install ./clients/python`` builds in an isolated environment and
would first download the backend named in ``requires`` (setuptools) — which
fails offline. This backend uses only the standard library and is found
through ``backend-path``, so ``requires = []`` and the install never touches
an index (``pip install --no-index ./clients/python`` works).

It writes a pure-Python wheel (``py3-none-any``) by hand with :mod:`zipfile`:
the modules listed in ``[tool.clothd-build] py-modules``; those of
``package-modules`` as packages (``clothd.py`` as ``clothd/__init__.py``)
holding the files of ``package-data`` (``py.typed``: a lone module cannot
carry the PEP 561 marker); and a
``.dist-info`` with METADATA (from ``[project]``), WHEEL, entry_points.txt
(``[project.scripts]``), top_level.txt and RECORD. ``build_sdist`` writes a
``.tar.gz`` of the sources; ``build_editable`` a wheel whose ``.pth`` file
points at this folder.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Files of the source distribution besides the modules.
SDIST_EXTRA = ["pyproject.toml", "README.md", "_build/clothd_build.py"]

# A fixed timestamp (1980-01-01, zip's epoch) keeps wheels reproducible.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


# ---- pyproject.toml -------------------------------------------------------------


def _parse_toml_subset(text: str) -> Dict[str, Any]:
    """Reads the TOML this project's pyproject.toml uses: [tables], and
    key = value with strings, numbers, booleans and one-line arrays of
    those. (Python 3.11+ has tomllib, used when present.)"""
    data: Dict[str, Any] = {}
    table = data
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[([A-Za-z0-9_.\-]+)\]", line)
        if m:
            table = data
            for part in m.group(1).split("."):
                table = table.setdefault(part, {})
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"pyproject.toml: cannot read {raw!r}")
        key = key.strip().strip('"')
        value = value.strip()
        value = {"true": "True", "false": "False"}.get(value, value)
        table[key] = ast.literal_eval(value)
    return data


def _pyproject() -> Dict[str, Any]:
    path = os.path.join(ROOT, "pyproject.toml")
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        with open(path, encoding="utf-8") as f:
            return _parse_toml_subset(f.read())
    with open(path, "rb") as f:
        return tomllib.load(f)


def _project() -> Tuple[Dict[str, Any], List[str]]:
    """[project], and every top-level name shipped (modules and packages)."""
    project, modules, packages, _data = _layout()
    return project, modules + packages


def _layout() -> Tuple[Dict[str, Any], List[str], List[str], List[str]]:
    """[project], the plain modules, the modules shipped as packages, and
    the package data each of those carries."""
    data = _pyproject()
    project = data["project"]
    build = data.get("tool", {}).get("clothd-build", {})
    modules = list(build.get("py-modules", []))
    packages = list(build.get("package-modules", []))
    if not modules and not packages:
        raise ValueError("pyproject.toml: [tool.clothd-build] ships no module")
    return project, modules, packages, list(build.get("package-data", []))


def _dist_name(project: Dict[str, Any]) -> str:
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project: Dict[str, Any]) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
    ]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    if project.get("keywords"):
        lines.append(f"Keywords: {','.join(project['keywords'])}")
    for c in project.get("classifiers", []):
        lines.append(f"Classifier: {c}")
    for dep in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {dep}")
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for dep in deps:
            lines.append(f'Requires-Dist: {dep}; extra == "{extra}"')
    body = ""
    readme = project.get("readme")
    if readme:
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = f.read()
        lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + body


def _entry_points(project: Dict[str, Any]) -> str:
    scripts = project.get("scripts", {})
    if not scripts:
        return ""
    return "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())


# ---- wheel writing ----------------------------------------------------------------


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _write_wheel(wheel_directory: str, files: List[Tuple[str, bytes]], project: Dict[str, Any],
                 top_level: List[str]) -> str:
    name, version = _dist_name(project), project["version"]
    dist_info = f"{name}-{version}.dist-info"
    wheel_name = f"{name}-{version}-py3-none-any.whl"
    meta = [
        (f"{dist_info}/METADATA", _metadata(project).encode()),
        (f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: clothd_build 1.0\n"
                               b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        (f"{dist_info}/top_level.txt", "".join(t + "\n" for t in top_level).encode()),
    ]
    entry_points = _entry_points(project)
    if entry_points:
        meta.append((f"{dist_info}/entry_points.txt", entry_points.encode()))
    everything = files + meta
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in everything)
    record += f"{dist_info}/RECORD,,\n"
    os.makedirs(wheel_directory, exist_ok=True)
    path = os.path.join(wheel_directory, wheel_name)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in everything + [(f"{dist_info}/RECORD", record.encode())]:
            info = zipfile.ZipInfo(arcname, date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return wheel_name


def _read(name: str) -> bytes:
    with open(os.path.join(ROOT, name), "rb") as f:
        return f.read()


def _module_files(modules: Sequence[str], packages: Sequence[str] = (),
                  package_data: Sequence[str] = ()) -> List[Tuple[str, bytes]]:
    out = [(mod + ".py", _read(mod + ".py")) for mod in modules]
    for pkg in packages:
        out.append((f"{pkg}/__init__.py", _read(pkg + ".py")))
        out.extend((f"{pkg}/{name}", _read(name)) for name in package_data)
    return out


# ---- PEP 517 hooks ------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[Dict[str, Any]] = None) -> str:
    project, modules = _project()
    dist_info = f"{_dist_name(project)}-{project['version']}.dist-info"
    target = os.path.join(metadata_directory, dist_info)
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(project))
    with open(os.path.join(target, "WHEEL"), "w", encoding="utf-8") as f:
        f.write("Wheel-Version: 1.0\nGenerator: clothd_build 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    with open(os.path.join(target, "top_level.txt"), "w", encoding="utf-8") as f:
        f.write("".join(m + "\n" for m in modules))
    entry_points = _entry_points(project)
    if entry_points:
        with open(os.path.join(target, "entry_points.txt"), "w", encoding="utf-8") as f:
            f.write(entry_points)
    return dist_info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    project, modules, packages, package_data = _layout()
    return _write_wheel(wheel_directory, _module_files(modules, packages, package_data), project,
                        modules + packages)


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """PEP 660: a wheel with a .pth file that puts this folder on sys.path."""
    project, modules = _project()
    pth = (f"_{_dist_name(project)}_editable.pth", (ROOT + "\n").encode())
    return _write_wheel(wheel_directory, [pth], project, modules)


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    project, modules, packages, package_data = _layout()
    base = f"{_dist_name(project)}-{project['version']}"
    names = [m + ".py" for m in modules + packages] + package_data + SDIST_EXTRA
    pkg_info = _metadata(project).encode()
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        def add(arcname: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"{base}/{arcname}")
            info.size = len(data)
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
        for name in names:
            with open(os.path.join(ROOT, name), "rb") as f:
                add(name, f.read())
        add("PKG-INFO", pkg_info)
    return base + ".tar.gz"
