"""A Python env file for the Gymnasium kind: make_env(seed, **[env] keys) makes one env."""
import gymnasium as gym


def make_env(seed, max_episode_steps=500, gravity=9.8):
    env = gym.make("CartPole-v1", max_episode_steps=int(max_episode_steps))
    env.unwrapped.gravity = float(gravity)
    return env
