// flappy: press SPACE to flap through the gaps between the pipes. +1 per pipe passed, touching
// a pipe or the ground ends the game, 25 pipes win. Written for puffgpu's JS envs (p5.js style
// + the RL contract).
let bird, pipes, score, gameState, nextPipe;

function setup() {
  createCanvas(400, 400);
}

function resetGame(seed) {
  bird = { x: 100, y: 200, vy: 0, r: 12 };
  pipes = [];
  score = 0;
  gameState = 'PLAYING';
  nextPipe = 1;
}

function keyPressed() {
  if (keyCode === 32 && gameState === 'PLAYING') bird.vy = -7;
}

function draw() {
  background(110, 190, 230);
  if (gameState === 'PLAYING') update();
  noStroke();
  fill(60, 170, 70);
  for (const p of pipes) {
    rect(p.x, 0, p.w, p.gap - p.size / 2);
    rect(p.x, p.gap + p.size / 2, p.w, height - p.gap - p.size / 2);
  }
  fill(200, 160, 90);
  rect(0, 380, 400, 20);
  fill(250, 220, 40);
  push();
  translate(bird.x, bird.y);
  rotate(constrain(bird.vy * 0.08, -0.6, 0.9));
  ellipse(0, 0, bird.r * 2.4, bird.r * 2);
  fill(240, 120, 40);
  triangle(bird.r * 1.1, -3, bird.r * 1.1, 5, bird.r * 1.8, 1);
  pop();
}

function update() {
  bird.vy = min(bird.vy + 0.5, 10);
  bird.y += bird.vy;
  nextPipe -= 1;
  if (nextPipe <= 0) {
    // the gap narrows from 190 to 130 over the first 10 pipes
    pipes.push({ x: 400, w: 50, gap: random(120, 280), size: max(130, 190 - 6 * score), passed: false });
    nextPipe = 75;
  }
  for (const p of pipes) {
    p.x -= 3;
    if (!p.passed && p.x + p.w < bird.x) { p.passed = true; score += 1; }
    const inX = bird.x + bird.r > p.x && bird.x - bird.r < p.x + p.w;
    const inGap = bird.y - bird.r > p.gap - p.size / 2 && bird.y + bird.r < p.gap + p.size / 2;
    if (inX && !inGap) gameState = 'GAMEOVER';
  }
  pipes = pipes.filter((p) => p.x + p.w > -10);
  if (bird.y < bird.r) { bird.y = bird.r; bird.vy = 0; }  // the sky is a ceiling
  if (bird.y + bird.r > 380) gameState = 'GAMEOVER';
  if (score >= 25) gameState = 'WIN';
}

function getGameState() {
  return { score: score, lives: gameState === 'GAMEOVER' ? 0 : 1, gameState: gameState };
}
