"""Maps the design card's folders onto the `overseer` namespace.

`libs/events` is `overseer.events`, `services/<name>` is `overseer.<name>`;
pyproject.toml holds everything else.
"""

from setuptools import find_packages, setup

ROOTS = {
    "overseer.events": "libs/events",
    "overseer.cli": "libs/cli",
    **{
        f"overseer.{name}": f"services/{name}"
        for name in ("reasoning", "executor", "col", "firewall", "observer", "gateway")
    },
}

packages: list[str] = []
package_dir: dict[str, str] = {}
for package, folder in ROOTS.items():
    packages.append(package)
    package_dir[package] = folder
    for sub in find_packages(folder):
        packages.append(f"{package}.{sub}")
        package_dir[f"{package}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"

setup(packages=packages, package_dir=package_dir)
