"""``python -m analysis.diagnose run=<run dir>``: runs :func:`analysis.diagnose.checklist.main`."""

from analysis.diagnose.checklist import main

if __name__ == "__main__":
    main()
