"""The Streamlit dashboard (``calibdash app``, ``streamlit run app.py``), grouped by role.

A package of its own beside the compute package :mod:`calibdash`, so that ``calibdash``
itself never imports Streamlit; it is installed with it (the same distribution).

- :mod:`calibdash_app.main`: the entry script: the navigation between the pages;
- :mod:`calibdash_app.app_pages`: the page scripts, which only lay out widgets;
- :mod:`calibdash_app.session`: a session's state, its restore token, the server's job pool;
- :mod:`calibdash_app.data`: the demo set chosen, the upload and its column mapping;
- :mod:`calibdash_app.settings`: the Evaluate page's settings, the paper's defaults;
- :mod:`calibdash_app.runs`: evaluations, comparisons and lab runs as jobs, the result cache;
- :mod:`calibdash_app.downloads`: the downloads and their file names;
- :mod:`calibdash_app.help`: the help texts;
- :mod:`calibdash_app.widgets`: widgets shared by the pages;
- :mod:`calibdash_app.clinical`: the Validate page's state, runs and downloads;
- :mod:`calibdash_app.jobs`: the pool of jobs run in child processes;
- :mod:`calibdash_app.store`: the sessions' state, in memory and on disk, for a reload or a restart.

All computation lives in ``calibdash``, which never imports this package. This
``__init__`` imports nothing: the job pool's child processes import :mod:`calibdash_app.jobs`
(and so this package) without streamlit.
"""
