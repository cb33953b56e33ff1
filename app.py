"""calibdash: how miscalibrated is a classifier? Entry point of the Streamlit app.

``streamlit run app.py`` (and hosting services, which look for this file) run it; the app is
the package's :mod:`calibdash_app`, whose entry script ``calibdash app`` serves.
"""

from calibdash_app.main import run

run()
