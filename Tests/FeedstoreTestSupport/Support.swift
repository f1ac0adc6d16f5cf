import Feedstore
