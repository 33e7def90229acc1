"""Installable QuaRL-GST: library (`quarl`), algorithms (`agents`), programs (`launch`).

Exact, verified pins live in requirements/lock.txt (the Makefile installs it);
the ranges here only say what the code needs.
"""
import setuptools

setuptools.setup(
    name='quarl-gst',
    version='0.1.0',
    description='Quantized actors (ActorQ) and group-sparse training (GST) for '
                'distributed deep RL on Acme + Reverb + Launchpad.',
    packages=setuptools.find_packages(include=['quarl*', 'agents*', 'launch*']),
    python_requires='>=3.10,<3.11',
    install_requires=[
        'tensorflow-cpu==2.8.4',
        'dm-acme==0.4.0',
        'dm-launchpad==0.5.0',
        'dm-reverb==0.7.2',
        'dm-sonnet==2.0.0',
        'numpy==1.23.5',
        'dm-control==1.0.50',
        'gym==0.26.2',
        # Atari (ale:GAME) with its bundled ROMs; Pillow shrinks the frames.
        'ale-py==0.9.1',
        'pillow',
        # A2C/PPO losses (also pulled in by dm-acme's TF extras).
        'trfl==1.2.0',
        'codecarbon==3.3.2',
        'ai-edge-litert==2.3.0',
        'matplotlib',
        'pandas',
        # launch.classify's digits set ships inside scikit-learn's wheel.
        'scikit-learn',
    ],
    extras_require={'dev': ['pytest', 'nbclient', 'nbformat', 'ipykernel']},
    entry_points={'console_scripts': [
        'quarl-train=launch.train:run_main',
    ]},
)
