"""The Streamlit dashboard (``calibdash app``, ``streamlit run app.py``), grouped by role.

- :mod:`calibdash.app.main`: the entry script: the navigation between the pages;
- :mod:`calibdash.app.app_pages`: the page scripts, which only lay out widgets;
- :mod:`calibdash.app.session`: a session's state, its restore token, the server's job pool;
- :mod:`calibdash.app.data`: the demo set chosen, the upload and its column mapping;
- :mod:`calibdash.app.settings`: the Evaluate page's settings, the paper's defaults;
- :mod:`calibdash.app.runs`: evaluations, comparisons and lab runs as jobs, the result cache;
- :mod:`calibdash.app.downloads`: the downloads and their file names;
- :mod:`calibdash.app.help`: the help texts;
- :mod:`calibdash.app.widgets`: widgets shared by the pages;
- :mod:`calibdash.app.clinical`: the Validate page's state, runs and downloads;
- :mod:`calibdash.app.jobs`: the pool of jobs run in child processes, and the session store.

All computation lives in the rest of ``calibdash``, which never imports this package. This
``__init__`` imports nothing: the job pool's child processes import :mod:`calibdash.app.jobs`
(and so this package) without streamlit.
"""
